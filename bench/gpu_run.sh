#!/usr/bin/env bash
# The runs on a lent GPU machine whose records are in dev/benchmarks/ (docs/benchmarks.md,
# "GPU figures", quotes them), in two calls so that each fits a device call's limit:
#   bench/gpu_run.sh test  OUTDIR   the machine's description, then make gpu-test
#   bench/gpu_run.sh bench OUTDIR   make gpu-bench; its JSON, PNG and logs copied to OUTDIR
#   bench/gpu_run.sh targets OUTDIR gc.compile's GPU targets (bench/gpu_targets.py), then
#                                   gradcore train compiled and eager (and compiled under
#                                   cProfile: where its time goes), and gradcore bench's
#                                   step suite with PyTorch eager and PyTorch's CUDA graph
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
targets)
  { date -u; echo "gradcore at ${REV:-unknown}"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    $PY -c "import sys, numpy, cupy, torch; print('python', sys.version.split()[0], 'numpy', numpy.__version__, 'cupy', cupy.__version__, 'torch', torch.__version__)"
  } >"$out/machine.txt" 2>&1
  cat "$out/machine.txt"
  timeout "${TARGETS_TIMEOUT:-150}" $PY bench/gpu_targets.py "$out/gpu-targets.json" 2>&1 \
      | tee "$out/gpu-targets.txt" | tail -40
  for how in "" --no-compile; do
    echo "gradcore train --device cuda $how"
    timeout 90 $PY -m gradcore train --device cuda --no-progress $how 2>&1 | grep -v "^epoch"
  done | tee "$out/gpu-train.txt"
  # where the compiled run's time goes (its first epochs: kernel loading, captures)
  timeout 90 $PY -m cProfile -o "$out/gpu-train.prof" -m gradcore train --device cuda \
      --no-progress >/dev/null 2>&1
  $PY -c "import pstats, sys; pstats.Stats(sys.argv[1]).sort_stats('cumulative').print_stats(45)" \
      "$out/gpu-train.prof" 2>&1 | tail -60 | tee "$out/gpu-train-profile.txt"
  timeout 90 $PY -m gradcore bench --suite step --sizes 256,512 --devices cuda --compare-torch \
      --repeat 20 --no-progress 2>&1 | tee "$out/gpu-bench-step.txt"
  ;;
*) echo "usage: $0 test|bench|targets OUTDIR" >&2; exit 2 ;;
esac
