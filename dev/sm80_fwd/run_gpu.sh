#!/bin/bash
# run_gpu.sh - build the sm80 forward alone (src/kernels/sm80/fwd.cu with -DCUDADENT_DEV, plus
# dev/sm80_fwd/exp_variants.cu through src/kernels/dev.h) and run its dev check, timings,
# experiments, sanitizers on the GPU
# machine. Logs under $OUT (or ./out).
# Usage: dev/sm80_fwd/run_gpu.sh ["build check bench exp prof sanitize"]
# EXTRA="...": more nvcc flags (dev knobs)
set -o pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
B=build-fwd80/gpu; mkdir -p $B
STEPS=${1:-"build check bench exp sanitize"}
ARCH=${ARCH:-"-gencode=arch=compute_90,code=sm_90"}
FLAGS="-O3 -DCUDADENT_DEV -I include -I src --expt-relaxed-constexpr -lineinfo $ARCH -Xcompiler -fPIC ${EXTRA:-}"
SRCS="src/kernels/sm80/fwd.cu src/device_info.c dev/sm80_fwd/exp_variants.cu"
PY="env PYTHONUNBUFFERED=1 python3 dev/sm80_fwd/fwd80.py $B/libfwd80.so"
if [[ $STEPS == *build* ]]; then
  nvcc $FLAGS -Xptxas=-v,-warn-spills -shared -o $B/libfwd80.so $SRCS \
    > $OUT/ptxas.txt 2>&1 &
  nvcc $FLAGS -o $B/sanitize_fwd dev/sm80_fwd/sanitize_fwd.cu $SRCS &
  wait
  [[ -f $B/libfwd80.so && -f $B/sanitize_fwd ]] || { cat $OUT/ptxas.txt; exit 1; }
  grep -E "error|Compiling|Used|spill" $OUT/ptxas.txt | grep -v warning | paste - - - | \
    sed -E 's/.*kernelI(.*)EEv[^\t]*\t/\1 /' | cut -c1-160
fi
[[ $STEPS == *check* ]] && $PY check > $OUT/check.txt 2>&1
[[ $STEPS == *bench* ]] && $PY bench > $OUT/bench.txt 2>&1
[[ $STEPS == *exp* ]] && $PY exp > $OUT/exp.txt 2>&1
if [[ $STEPS == *prof* ]]; then
  ncu --clock-control none -k regex:cd_sm80 --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
    --section LaunchStats $PY prof > $OUT/ncu.txt 2>&1
  echo "ncu rc=$?"
fi
if [[ $STEPS == *sanitize* ]]; then
  for tool in memcheck racecheck synccheck; do
    compute-sanitizer --tool $tool --error-exitcode 3 $B/sanitize_fwd > $B/sanitize_$tool.txt 2>&1
    echo "compute-sanitizer $tool: rc=$? $(tail -1 $B/sanitize_$tool.txt)"
  done
  head -c 20000 $B/sanitize_racecheck.txt > $OUT/racecheck.txt
fi
