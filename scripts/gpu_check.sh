#!/usr/bin/env bash
# The one GPU-machine job: build for Hopper (16 cores), run the C test suite on each kernel path,
# compute-sanitizer on a small causal GQA shape, the CLI's default suite, and (where torch
# imports) the Python tests and the side-by-side bench. Into $OUT (or ./gpu-logs): 0-summary.txt,
# the bench reports and logs.tar.gz.
#   scripts/gpu_check.sh [tests] [install] [sanitize] [bwdrepeat] [bench] [python]
#                        [pybench-quick|pybench-full] [pybench-varlen]
# With no argument: tests install sanitize bench. Also: bwdrepeat (gpu_bwd three times, fresh
# seeds each); pybench-varlen (issue 28's varlen suite: VARLEN_BACKENDS, default cudadent,flex,
# 3 rounds; its goal lines go into the summary).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-logs}
mkdir -p "$out"
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(tests install sanitize bench)
# What comes back from the GPU machine is at most 8 files: the summary (named to sort first), the
# bench reports and one archive of every log, written on exit.
summary="$out/0-summary.txt"
logs=$(mktemp -d)
trap 'tar -czf "$out/logs.tar.gz" -C "$logs" . 2>/dev/null' EXIT
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }

{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
  nvcc --version | tail -1
  git log -1 --format='commit %h %s' 2>/dev/null || true; } > "$logs/env.txt" 2>&1
note "env: $(tr '\n' ' ' < "$logs/env.txt")"

t0=$(date +%s)
if ! { cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCUDADENT_GPU_ARCHS=90a \
       && cmake --build build-gpu -j 16; } > "$logs/build.log" 2>&1; then
  note "BUILD FAILED (see build.log)"; tail -40 "$logs/build.log"; exit 1
fi
note "build: $(( $(date +%s) - t0 )) s"

for step in "${steps[@]}"; do
  case $step in
    tests)
      : > "$logs/tests.log"
      # default dispatch runs everything (on Hopper: both sm90 kernels); then each path forced
      # (gpu_fwd also matches gpu_fwd_nolse); sm80:gpu_bwd is the portable backward on Hopper
      for run in default:all sm80:gpu_fwd sm90:gpu_fwd sm80:gpu_bwd sm90:gpu_bwd; do
        path=${run%%:*} filter=${run#*:}
        [ "$filter" = all ] && filter=""
        ( [ "$path" = default ] || export CUDADENT_KERNEL=$path
          timeout 900 build-gpu/tests/cudadent_tests $filter > "$logs/tests-run.log" 2>&1 )
        note "tests ($path ${filter:-all}): $(tail -1 "$logs/tests-run.log")"
        grep -E '^\[ FAIL' "$logs/tests-run.log" | head -20 | tee -a "$summary"
        { echo "==== tests $path ${filter:-all}"; cat "$logs/tests-run.log"; } >> "$logs/tests.log"
        rm -f "$logs/tests-run.log"
      done
 ;;
    install)
      (cd build-gpu && ctest -R install --output-on-failure > "$logs/install.log" 2>&1)
      note "install + README example: $(grep -E 'tests passed|tests failed' "$logs/install.log")"
      grep -E 'forward ran|no CUDA device' "$logs/install.log" | tee -a "$summary" ;;
    sanitize)
      : > "$logs/sanitize.log"
      for tool in memcheck racecheck; do
        for path in sm80 sm90; do
          bwd=--bwd
          CUDADENT_KERNEL=$path timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 \
            build-gpu/cudadent-bench --batch 1 --seqlen-q 200 --seqlen-k 300 --heads 4 \
            --heads-kv 2 --head-dim 64 --causal $bwd --check --iters 1 > "$logs/sanitize-run.log" 2>&1
          note "compute-sanitizer $tool ($path): rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$logs/sanitize-run.log" | tail -1)"
          { echo "==== $tool $path"; cat "$logs/sanitize-run.log"; } >> "$logs/sanitize.log"
          rm -f "$logs/sanitize-run.log"
        done
        # the sm90 forward's other tile rows: d128 (long keys, unmasked) and d64 with 192 query
        # rows (unmasked; masked from seqlen_q 2048, where consumers release the tile's blocks
        # outside their own range), the row-sum twins of the rows (forward without LSE), and 768
        # tiles (~6 a CTA: each of the two Q slots of the d64 rows reused), and 2048 causal d64
        # tiles whose last two rounds the host's tail deals out (later flags win)
        for shape in "--head-dim 128 --seqlen-q 300 --seqlen-k 4500 --dtype fp16" \
                     "--head-dim 64 --seqlen-q 400 --seqlen-k 700" \
                     "--head-dim 64 --seqlen-q 2100 --seqlen-k 2300 --window 300,0" \
                     "--head-dim 128 --seqlen-q 300 --seqlen-k 500 --causal --no-lse" \
                     "--head-dim 64 --seqlen-q 400 --seqlen-k 700 --no-lse" \
                     "--head-dim 64 --seqlen-q 200 --seqlen-k 300 --causal --dtype fp16 --no-lse" \
                     "--head-dim 64 --seqlen-q 200 --seqlen-k 160 --batch 24 --heads 16 --heads-kv 4" \
                     "--head-dim 64 --seqlen-q 512 --seqlen-k 512 --batch 16 --heads 32 --heads-kv 8 --causal"; do
          CUDADENT_KERNEL=sm90 timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 \
            build-gpu/cudadent-bench --batch 1 --heads 4 --heads-kv 2 $shape --check --iters 1 \
            > "$logs/sanitize-run.log" 2>&1
          note "compute-sanitizer $tool (sm90, $shape): rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$logs/sanitize-run.log" | tail -1)"
          { echo "==== $tool sm90 $shape"; cat "$logs/sanitize-run.log"; } >> "$logs/sanitize.log"
          rm -f "$logs/sanitize-run.log"
        done
      done ;;
    bwdrepeat)
      for rep in 1 2 3; do
        timeout 300 build-gpu/tests/cudadent_tests gpu_bwd > "$logs/tests-run.log" 2>&1
        note "tests (gpu_bwd repeat $rep): $(tail -1 "$logs/tests-run.log")"
        grep -E '^\[ FAIL' -B8 "$logs/tests-run.log" | head -40 | tee -a "$summary"
        { echo "==== gpu_bwd repeat $rep"; cat "$logs/tests-run.log"; } >> "$logs/tests.log"
        rm -f "$logs/tests-run.log"
      done ;;
    bench)
      build-gpu/cudadent-bench --suite default > "$logs/bench-default.log" 2>&1
      note "bench default suite: $(tail -1 "$logs/bench-default.log")"
      cat "$logs/bench-default.log" ;;
    python)
      CUDADENT_LIBRARY=$PWD/build-gpu/libcudadent.so PYTHONPATH=$PWD/python CUDADENT_TEST_STRICT=1 \
        timeout 600 python3 -m pytest -q -rs tests/python > "$logs/pytest.log" 2>&1
      note "pytest: $(tail -1 "$logs/pytest.log")" ;;
    pybench-quick|pybench-full)
      flag=$([ "$step" = pybench-quick ] && echo --quick || echo "--time-limit ${PYBENCH_LIMIT:-300}")
      CUDADENT_LIBRARY=$PWD/build-gpu/libcudadent.so PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 \
        timeout 900 python3 -m cudadent.bench $flag --out "$out" > "$logs/pybench.log" 2>&1
      note "pybench: rc $?"; tail -60 "$logs/pybench.log" ;;
    pybench-varlen)
      CUDADENT_LIBRARY=$PWD/build-gpu/libcudadent.so PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 \
        timeout 540 python3 -m cudadent.bench --suite varlen \
        --backends "${VARLEN_BACKENDS:-cudadent,flex}" --rounds 3 \
        --time-limit "${PYBENCH_LIMIT:-300}" --out "$out" > "$logs/pybench-varlen.log" 2>&1
      note "pybench varlen: rc $?"
      grep -hE '^- cudadent packed' "$out"/*-varlen*.md 2>/dev/null | tee -a "$summary"
      tail -40 "$logs/pybench-varlen.log" ;;
    *) note "unknown step $step" ;;
  esac
done
echo "==== summary"; cat "$summary"
