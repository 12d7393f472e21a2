VENV := .venv
# PYTHON=python3 uses that interpreter as it is, without the virtualenv and installs:
# for a machine whose Python already has the dependencies and no network, such as a
# GPU machine with CuPy (make gpu-test PYTHON=python3).
ifdef PYTHON
PY := $(PYTHON)
STAMP :=
else
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
endif
PYTEST_ARGS ?=
BENCH_ARGS ?=
BENCH_FLAGS := --benchmark-only --benchmark-columns=min,median,mean,rounds --benchmark-sort=name

.PHONY: install test gpu-test bench gpu-bench lint demo docs clean

install: $(STAMP)

# Create the virtual environment when missing and install gradcore editable with its
# dev extras; redone whenever pyproject.toml changes.
$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install -e '.[dev]'
	touch $@

test: $(STAMP)
	$(PY) -m pytest tests $(PYTEST_ARGS)

gpu-test: $(STAMP)
	GRADCORE_TEST_DEVICES=cuda $(PY) -m pytest tests $(PYTEST_ARGS)

# bench/: the five speed targets (test_targets.py) and the suites (test_suites.py) on the CPU
bench: $(STAMP)
	GRADCORE_BENCH_DEVICES=cpu $(PY) -m pytest bench $(BENCH_FLAGS) $(BENCH_ARGS)

# the suites on the GPU (skipped, with the reason, without a usable one), then gradcore
# bench's CPU-against-GPU sweeps, with PyTorch on each device where installed; the
# figures are written to dev/benchmarks/ (measurement records, not users' docs)
gpu-bench: $(STAMP)
	mkdir -p dev/benchmarks
	GRADCORE_BENCH_DEVICES=cuda $(PY) -m pytest bench/test_suites.py $(BENCH_FLAGS) \
	  --benchmark-json=dev/benchmarks/gpu-suites.json $(BENCH_ARGS)
	$(PY) -m gradcore bench --suite all --devices cpu,cuda --compare-torch \
	  --json dev/benchmarks/gpu.json --plot dev/benchmarks/gpu.png

# ruff, then the layers of the package ([tool.importlinter] in pyproject.toml), run through
# the interpreter so that PYTHON=python3 works as well as the virtualenv
lint: $(STAMP)
	$(PY) -m ruff check gradcore tests bench docs/hooks
	$(PY) -c "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"

# The users' documentation site (mkdocs.yml): docs/ and the API reference made from the
# docstrings, built with warnings as errors into site/ (open site/index.html). Installs
# only the docs extra (MkDocs, Material, mkdocstrings), once.
ifdef PYTHON
DOCS_STAMP :=
else
DOCS_STAMP := $(VENV)/.docs-installed
endif

$(VENV)/.docs-installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet -e '.[docs]'
	touch $@

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

# The main job: train an MLP on handwritten digits on the best available device, then
# compare CPU and GPU backward time. With a GPU (nvidia-smi lists one) the matching CuPy
# wheel is installed first (not with PYTHON=..., whose interpreter is taken as it is).
# Only what the demo needs (gradcore, scikit-learn, tqdm, and CuPy with the CUDA
# libraries from the package index on a GPU machine), installed once: redone when
# pyproject.toml changes, not on every run.
ifdef PYTHON
DEMO_STAMP :=
else
DEMO_STAMP := $(VENV)/.demo-installed
endif

$(VENV)/.demo-installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	@if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then \
	  major=$$(nvidia-smi | sed -n 's/.*CUDA Version: *\([0-9][0-9]*\).*/\1/p' | head -n 1); \
	  extra=cuda12; if [ "$${major:-12}" -ge 13 ]; then extra=cuda13; fi; \
	  echo "GPU found (CUDA $$major): installing gradcore[examples,$$extra]"; \
	  $(PY) -m pip install --quiet -e ".[examples,$$extra]"; \
	else \
	  $(PY) -m pip install --quiet -e '.[examples]'; \
	fi
	touch $@

demo: $(DEMO_STAMP)
	@if [ -n "$(PYTHON)" ]; then echo "PYTHON=$(PYTHON): using its packages as they are"; fi
	$(PY) -m gradcore train
	$(PY) -m gradcore compare

clean:
	rm -rf $(VENV) build dist site *.egg-info .pytest_cache .benchmarks .hypothesis .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
