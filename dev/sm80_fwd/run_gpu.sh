#!/bin/bash
# run_gpu.sh - build the sm80 forward alone (plus the experiments of exp_variants.cu) and run its
# dev check, timings, experiments, ncu profile, sanitizers on the GPU machine. Logs under $OUT
# (or ./out). Usage: dev/sm80_fwd/run_gpu.sh ["build check bench exp prof sanitize"]
set -o pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
B=build-fwd80/gpu; mkdir -p $B
STEPS=${1:-"build check bench exp prof sanitize"}
ARCH=${ARCH:-"-gencode=arch=compute_90,code=sm_90"}
FLAGS="-O3 -I include -I src --expt-relaxed-constexpr -lineinfo $ARCH -Xcompiler -fPIC"
PY="env PYTHONUNBUFFERED=1 python3 dev/sm80_fwd/fwd80.py $B/libfwd80.so"
if [[ $STEPS == *build* ]]; then
  nvcc $FLAGS -Xptxas=-v,-warn-spills -c -o $B/fwd.o src/kernels/sm80/fwd.cu > $OUT/ptxas.txt 2>&1 &
  for part in 1 2 3; do
    nvcc $FLAGS -Xptxas=-v,-warn-spills -DEXP_PART=$part -c -o $B/exp$part.o \
      dev/sm80_fwd/exp_variants.cu > $B/ptxas_exp$part.txt 2>&1 &
  done
  wait
  cat $B/ptxas_exp*.txt >> $OUT/ptxas.txt
  nvcc $ARCH -shared -o $B/libfwd80.so $B/fwd.o $B/exp1.o $B/exp2.o $B/exp3.o || exit 1
  nvcc $FLAGS -o $B/sanitize_fwd dev/sm80_fwd/sanitize_fwd.cu src/kernels/sm80/fwd.cu || exit 1
  grep -E "error|Compiling|Used|spill" $OUT/ptxas.txt | grep -v warning | paste - - - | \
    sed -E 's/ptxas info *: Compiling entry function .(_Z[^ ]*). for .sm_[0-9]+./\1/' | cut -c1-220
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
fi
