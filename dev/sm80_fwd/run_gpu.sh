#!/bin/bash
# run_gpu.sh - build the sm80 forward alone and run its dev check, timings, sanitizers, ptxas
# report on the GPU machine. Logs under $OUT (or ./out). Usage: dev/sm80_fwd/run_gpu.sh [steps]
# steps: any of build check bench sanitize (default: all)
set -o pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
B=build-fwd80/gpu; mkdir -p $B
STEPS=${1:-"build check bench sanitize"}
ARCH=${ARCH:-"-gencode=arch=compute_90,code=sm_90"}
FLAGS="-O3 -I include -I src --expt-relaxed-constexpr -lineinfo $ARCH"
if [[ $STEPS == *build* ]]; then
  nvcc $FLAGS -Xptxas=-v,-warn-spills -shared -Xcompiler -fPIC -o $B/libfwd80.so \
    src/kernels/sm80/fwd.cu 2>&1 | tee $OUT/ptxas.txt | grep -E "error|Used|spill" || exit 1
  nvcc $FLAGS -o $B/sanitize_fwd dev/sm80_fwd/sanitize_fwd.cu src/kernels/sm80/fwd.cu || exit 1
fi
if [[ $STEPS == *check* ]]; then
  PYTHONUNBUFFERED=1 python3 dev/sm80_fwd/fwd80.py $B/libfwd80.so check 2>&1 | tee $OUT/check.txt
fi
if [[ $STEPS == *bench* ]]; then
  PYTHONUNBUFFERED=1 python3 dev/sm80_fwd/fwd80.py $B/libfwd80.so bench 2>&1 | tee $OUT/bench.txt
fi
if [[ $STEPS == *sanitize* ]]; then
  for tool in memcheck racecheck synccheck; do
    compute-sanitizer --tool $tool --error-exitcode 3 $B/sanitize_fwd > $OUT/sanitize_$tool.txt 2>&1
    echo "compute-sanitizer $tool: rc=$? $(tail -1 $OUT/sanitize_$tool.txt)"
  done
fi
