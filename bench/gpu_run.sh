#!/usr/bin/env bash
# The runs on a lent GPU machine whose records are in dev/benchmarks/ (docs/benchmarks.md,
# "GPU figures", quotes them), in two calls so that each fits a device call's limit:
#   bench/gpu_run.sh test  OUTDIR   the machine's description, then make gpu-test
#   bench/gpu_run.sh bench OUTDIR   make gpu-bench; its JSON, PNG and logs copied to OUTDIR
# PYTHON (default python3) is taken as it is: no virtualenv, no installs, since the GPU
# machine's Python already has CuPy, pytest and pytest-benchmark, and no network.
set -u -o pipefail
phase=${1:?test or bench}
out=${2:?output folder}
mkdir -p "$out"
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
case $phase in
test)
  { date -u; nvidia-smi; git log -1 --format='gradcore at %h %s' 2>/dev/null
    $PY -c "import sys, numpy, cupy; print('python', sys.version.split()[0], 'numpy', numpy.__version__, 'cupy', cupy.__version__)"
    $PY -c "import torch; print('torch', torch.__version__, torch.cuda.is_available())"
  } >"$out/machine.txt" 2>&1
  cat "$out/machine.txt"
  jobs=""
  $PY -c "import xdist" 2>/dev/null && jobs="-n ${JOBS:-8}"
  start=$(date +%s)
  timeout "${TEST_TIMEOUT:-540}" make gpu-test PYTHON="$PY" \
      PYTEST_ARGS="-q -rfEs $jobs -p no:cacheprovider --durations=10 --junitxml=$out/gpu-test.xml" \
      2>&1 | tee "$out/gpu-test.log"
  rc=$?
  echo "gpu-test: exit $rc after $(( $(date +%s) - start )) s" | tee -a "$out/gpu-test.log"
  exit $rc
  ;;
bench)
  start=$(date +%s)
  make gpu-bench PYTHON="$PY" 2>&1 | tee "$out/gpu-bench.log"
  rc=$?
  cp dev/benchmarks/gpu.json dev/benchmarks/gpu.png dev/benchmarks/gpu-suites.json "$out"/
  echo "gpu-bench: exit $rc after $(( $(date +%s) - start )) s" | tee -a "$out/gpu-bench.log"
  exit $rc
  ;;
*) echo "usage: $0 test|bench OUTDIR" >&2; exit 2 ;;
esac
