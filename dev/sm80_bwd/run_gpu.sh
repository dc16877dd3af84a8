#!/bin/bash
# run_gpu.sh - on the GPU machine, from the repository root: build the sm80 backward standalone
# (sm_90 code), check it against the CPU reference (check_bwd), run compute-sanitizer on small
# cases, then time it beside SDPA's flash backward (bench_bwd.py). Logs under $OUT.
# usage: dev/sm80_bwd/run_gpu.sh [check|bench|all] [bench args...]
set -o pipefail
what=${1:-all}; shift
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
B=build-bwd80-dev; mkdir -p $B
ARCH=${ARCH:-90}
nvcc -O3 -std=c++17 --expt-relaxed-constexpr -gencode=arch=compute_${ARCH},code=sm_${ARCH} -Xptxas -v \
  -lineinfo -Xcompiler -fPIC -I include -I src -c src/kernels/sm80/bwd.cu -o $B/bwd.o 2> $OUT/ptxas.txt \
  || { cat $OUT/ptxas.txt; exit 1; }
grep -A2 "sm80_bwd_main" $OUT/ptxas.txt | grep -E "stack|registers" | paste - - | sed 's/ptxas info    ://'
gcc -O2 -fPIC -I include -I src -I /usr/local/cuda/include -c dev/sm80_bwd/shim.c -o $B/shim.o || exit 1
nvcc -shared $B/shim.o $B/bwd.o -o $B/libbwd80.so -lcudart || exit 1
gcc -O2 -I include -I src -I src/reference -I /usr/local/cuda/include -c dev/sm80_bwd/check_bwd.c -o $B/check.o || exit 1
gcc -O2 -I include -c src/reference/reference.c -o $B/ref.o || exit 1
nvcc $B/check.o $B/bwd.o $B/ref.o -o $B/check_bwd -lpthread -lm || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
if [ "$what" = check ] || [ "$what" = all ]; then
  echo "== check_bwd"; ./$B/check_bwd 2>&1 | tee $OUT/check.txt | grep -E "FAIL|worst|check_bwd|NOT"
  echo "== memcheck (tiny)"; compute-sanitizer --tool memcheck ./$B/check_bwd tiny > $OUT/memcheck.txt 2>&1; tail -2 $OUT/memcheck.txt
  echo "== racecheck (tiny)"; compute-sanitizer --tool racecheck ./$B/check_bwd tiny > $OUT/racecheck.txt 2>&1; tail -2 $OUT/racecheck.txt
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  echo "== bench"; PYTHONUNBUFFERED=1 python3 dev/sm80_bwd/bench_bwd.py $B/libbwd80.so "$@" 2>&1 | tee $OUT/bench.txt | grep -v "^bwd"
fi
