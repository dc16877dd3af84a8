#!/bin/bash
# run_gpu.sh - on the GPU machine, from the repository root: build the sm80 backward standalone
# (sm_90 code) with the given -D flags, check it against the CPU reference (check_bwd), run
# compute-sanitizer on small cases, time it beside SDPA's flash backward (bench_bwd.py), or
# profile it with ncu. Logs under $OUT/<name>-*.
# usage: dev/sm80_bwd/run_gpu.sh NAME "DEFINES" [check] [sanitize] [bench[-det]] [ncu]
set -o pipefail
name=$1; defs=$2; shift 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
B=build-bwd80-dev/$name; mkdir -p $B
ARCH=${ARCH:-90}
nvcc -O3 -std=c++17 --expt-relaxed-constexpr -gencode=arch=compute_${ARCH},code=sm_${ARCH} -Xptxas -v \
  -lineinfo -Xcompiler -fPIC $defs -I include -I src -c src/kernels/sm80/bwd.cu -o $B/bwd.o 2> $B/ptxas.txt \
  || { cat $B/ptxas.txt; exit 1; }
echo "[$name] $(grep -A2 "cd_sm80_bwd_main" $B/ptxas.txt | grep -E "registers|stack" | paste - - | sed 's/ptxas info    ://' | sort -u | tr '\n' ' ')"
gcc -O2 -fPIC -I include -I src -I /usr/local/cuda/include -c dev/sm80_bwd/shim.c -o $B/shim.o || exit 1
gcc -O2 -fPIC -I src -I /usr/local/cuda/include -c src/device_info.c -o $B/device_info.o || exit 1
nvcc -shared $B/shim.o $B/bwd.o $B/device_info.o -o $B/libbwd80.so -lcudart || exit 1
gcc -O2 -I include -I src -I src/reference -I /usr/local/cuda/include -c dev/sm80_bwd/check_bwd.c -o $B/check.o || exit 1
gcc -O2 -I include -c src/reference/reference.c -o $B/ref.o || exit 1
nvcc $B/check.o $B/bwd.o $B/device_info.o $B/ref.o -o $B/check_bwd -lpthread -lm || exit 1
for step in "$@"; do
  case $step in
    check) ./$B/check_bwd > $OUT/$name-check.txt 2>&1
           echo "[$name] check: $(grep -c '^ok' $OUT/$name-check.txt) ok, $(grep -c '^FAIL' $OUT/$name-check.txt) FAIL";;
    sanitize) timeout 100 compute-sanitizer --tool memcheck ./$B/check_bwd tiny > $OUT/$name-san.txt 2>&1
           timeout 150 compute-sanitizer --tool racecheck ./$B/check_bwd tiny >> $OUT/$name-san.txt 2>&1
           echo "[$name] sanitizers: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$name-san.txt | tr '\n' ' ')";;
    bench) PYTHONUNBUFFERED=1 python3 dev/sm80_bwd/bench_bwd.py $B/libbwd80.so > $OUT/$name-bench.txt 2>&1;;
    bench-det) PYTHONUNBUFFERED=1 python3 dev/sm80_bwd/bench_bwd.py $B/libbwd80.so --det > $OUT/$name-bench.txt 2>&1;;
    ncu) for shape in "128 16384 0" "64 16384 0"; do
           timeout 120 ncu --clock-control none -k regex:cd_sm80_bwd_main -s 2 -c 1 --section SpeedOfLight \
             --section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
             --section Occupancy python3 dev/sm80_bwd/bench_bwd.py $B/libbwd80.so --profile $shape \
             >> $OUT/$name-ncu.txt 2>&1; done
         echo "[$name] ncu done";;
  esac
done
