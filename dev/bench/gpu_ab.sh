#!/usr/bin/env bash
# gpu_ab.sh - one GPU-machine call for an A/B of library builds in the package bench.
#   OUT=dir [EXTRA="label=flag,flag ..."] [AB="bench args"] [REPS=n] [TESTS=1] [SAN=1] dev/bench/gpu_ab.sh
# Builds, in parallel: the working tree (label new, build-gpu/), a base tree where build-base/
# holds one (label base; make it here with
#   rm -rf build-base && mkdir build-base && git archive REV | tar -x -C build-base
# and send it with the run's carry: build-base is ignored by git), and one variant of the working
# tree per EXTRA entry, built with those nvcc flags (commas for spaces). Then: ptxas C75xx
# notices and spills of every build; the sm90 kernels' SASS against the base's
# (dev/bench/sass_compare.py); TESTS: gpu_fwd forced onto sm90 (new); AB: dev/bench/ab.sh over
# every library with the bench args given (e.g. "--head-dims 64 --causal yes --seqlens 512,1024");
# SASS_DUMP: a kernel name fragment whose listings from base and new are kept;
# SAN: memcheck and racecheck (new) on a causal shape whose last rounds the tail deals out.
# Logs and ab.tgz (the bench JSONs) under $OUT.
set -u
cd "$(dirname "$0")/../.."
O=${OUT:-/tmp/gpu-ab}; mkdir -p "$O"
export CUDADENT_GIT_COMMIT=${CUDADENT_GIT_COMMIT:-$(git log -1 --format=%h 2>/dev/null)+}
nvidia-smi --query-gpu=name,clocks.sm,power.limit --format=csv,noheader | tee "$O/env.txt"
t0=$(date +%s)
cfg="-DCMAKE_BUILD_TYPE=Release -DCUDADENT_GPU_ARCHS=90a"
{ cmake -S . -B build-gpu $cfg && cmake --build build-gpu -j 8; } > "$O/build-new.log" 2>&1 & pids=($!)
libs=(new=$PWD/build-gpu/libcudadent.so)
if [ -d build-base ]; then
  { cmake -S build-base -B build-base/b $cfg && cmake --build build-base/b -j 4 --target cudadent; } \
    > "$O/build-base.log" 2>&1 & pids+=($!)
  libs=(base=$PWD/build-base/b/libcudadent.so "${libs[@]}")
fi
for spec in ${EXTRA:-}; do
  lab=${spec%%=*} flags=${spec#*=}
  { cmake -S . -B "build-x-$lab" $cfg "-DCMAKE_CUDA_FLAGS=-DCUDADENT_DEV ${flags//,/ }" \
      && cmake --build "build-x-$lab" -j 4 --target cudadent; } > "$O/build-$lab.log" 2>&1 & pids+=($!)
  libs+=("$lab=$PWD/build-x-$lab/libcudadent.so")
done
for p in "${pids[@]}"; do wait "$p" || echo "a build failed (rc $?): see $O/build-*.log"; done
echo "builds: $(( $(date +%s) - t0 )) s"
grep -h "C75" "$O"/build-*.log | sort | uniq -c | head
grep -h "spill" "$O"/build-*.log | grep -v " 0 bytes spill" | grep -v sm80 | head
if [ -d build-base ]; then
  cuobjdump -sass build-base/b/libcudadent.so > /tmp/sass-base.txt
  cuobjdump -sass build-gpu/libcudadent.so > /tmp/sass-new.txt
  python3 dev/bench/sass_compare.py /tmp/sass-base.txt /tmp/sass-new.txt | tee "$O/sass-compare.txt"
  if [ -n "${SASS_DUMP:-}" ]; then # a kernel's whole listing from both (e.g. sm90_fwd_kernelILi4ELb0)
    for v in base new; do
      awk -v k="$SASS_DUMP" '/Function :/ { on = index($0, k) > 0 } on' /tmp/sass-$v.txt > "$O/sass-$v-$SASS_DUMP.txt"
    done
  fi
fi
if [ -n "${TESTS:-}" ]; then
  CUDADENT_KERNEL=sm90 timeout 240 build-gpu/tests/cudadent_tests gpu_fwd > "$O/tests-sm90-fwd.log" 2>&1
  echo "tests sm90 gpu_fwd: $(tail -1 "$O/tests-sm90-fwd.log")"
  grep '^\[ FAIL' "$O/tests-sm90-fwd.log" | head
fi
if [ -n "${AB:-}" ]; then
  rm -rf /tmp/ab
  OUT=/tmp/ab REPS=${REPS:-2} bash dev/bench/ab.sh "${libs[@]}" -- $AB
  tar czf "$O/ab.tgz" -C /tmp ab
fi
if [ -n "${SAN:-}" ]; then
  # 2048 tiles on 132 CTAs: the tail deals rounds 14-15 (tests/test_tile_order.cu)
  for extra in "--head-dim 64" "--head-dim 64 --no-lse" "--head-dim 128 --dtype fp16"; do
    for tool in memcheck racecheck; do
      CUDADENT_KERNEL=sm90 timeout 75 compute-sanitizer --tool $tool --error-exitcode 9 \
        build-gpu/cudadent-bench --batch 16 --seqlen-q 512 --seqlen-k 512 --heads 32 --heads-kv 8 \
        --causal $extra --check --iters 1 > "$O/san.log" 2>&1
      echo "$tool causal 16x512 h32/8 $extra: rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$O/san.log" | tail -1)"
      cat "$O/san.log" >> "$O/sanitize.log"
    done
  done
  rm -f "$O/san.log"
fi
echo "total $(( $(date +%s) - t0 )) s"
