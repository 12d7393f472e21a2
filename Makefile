VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=
BENCH_ARGS ?=
BENCH_FLAGS := --benchmark-only --benchmark-columns=min,median,mean,rounds --benchmark-sort=name

.PHONY: install test gpu-test bench gpu-bench lint demo clean

install: $(STAMP)

# Create the virtual environment when missing and install gradcore editable with its
# dev extras; redone whenever pyproject.toml changes.
$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install -e '.[dev]'
	touch $@

test: $(STAMP)
	$(PY) -m pytest tests $(PYTEST_ARGS)

gpu-test: $(STAMP)
	GRADCORE_TEST_DEVICES=cuda $(PY) -m pytest tests $(PYTEST_ARGS)

bench: $(STAMP)
	$(PY) -m pytest bench $(BENCH_FLAGS) $(BENCH_ARGS)

gpu-bench: $(STAMP)
	GRADCORE_BENCH_DEVICES=cuda $(PY) -m pytest bench $(BENCH_FLAGS) $(BENCH_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check gradcore tests bench

demo: $(STAMP)
	$(PY) -m gradcore.demo

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .benchmarks .hypothesis .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
