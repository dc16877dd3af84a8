#!/usr/bin/env bash
# dev/sm80_bwd/w96_run.sh - one GPU call for the portable path's width 96 (dispatch.h
# CUDADENT_SM80_W96; docs/kernels/sm80_fwd.md and sm80_bwd.md "W = 96"): the variant folder W96_VAR
# (default build-carry-w96: the library built with the gate at 1) tested, sanitized and timed
# against the library, W96_BASE (default build-carry), every call forced onto the portable path
# (CUDADENT_KERNEL=sm80). Build the variant on the workstation first:
#   JOBS=2 PREBUILD_GZ=1 PREBUILD_FLAGS=-DCUDADENT_SM80_W96=1 dev/tools/prebuild.sh
#   (writes build-carry/; copy it to build-carry-w96/)
# then, from the repository root with carry build-carry and build-carry-w96 (~25 MB):
#   dev/sm80_bwd/w96_run.sh [tests] [sanitize] [time] [pybench]
#   (default: all four, ~8 minutes: tests ~2, sanitize ~1, time ~2, pybench ~3; under one call's 10
#   minutes, or split it: `tests sanitize time`, then `pybench`)
# into $OUT (or gpu-logs): 0-summary.txt and the logs of every step.
#   tests:    the C suite's gpu_dims_fwd and gpu_dims_bwd on the w96 build (their d96, d72 / 80 / 88
#             and head_dim_v != head_dim cases then run the width 96).
#   sanitize: compute-sanitizer memcheck, forward and --bwd --check, on two small d96 shapes
#             (causal GQA with a ragged length; gapped fp16 with head_dim_v 80).
#   time:     CLI, base and w96 alternated twice, bf16 --iters 30, forward and --bwd: d96 h21 b8 s2k
#             non-causal and causal, b2 s8k causal.
#   pybench:  python -m cudadent.bench --suite dims, cudadent (the w96 library) against SDPA's flash
#             backend (FA2), both directions forced onto sm80: the d96 rows are the ones to read.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-logs}
mkdir -p "$out"
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(tests sanitize time pybench)
summary="$out/0-summary.txt"
touch "$summary"
note() { echo "$*" | tee -a "$summary"; }
note "env: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) $(git log -1 --format=%h 2>/dev/null)"
var=${W96_VAR:-build-carry-w96} base=${W96_BASE:-build-carry}
note "w96: $var, base: $base"
. dev/tools/unpack_carry.sh # unpack_carry: a carried folder's library and binaries
unpack_carry "$var" build-w96 || { note "$var incomplete (dev/tools/prebuild.sh)"; exit 1; }
unpack_carry "$base" build-w96-base || { note "$base incomplete"; exit 1; }
w96="env CUDADENT_KERNEL=sm80 LD_LIBRARY_PATH=$PWD/build-w96"
lib="env CUDADENT_KERNEL=sm80 LD_LIBRARY_PATH=$PWD/build-w96-base"
for step in "${steps[@]}"; do
  note "---- $step"
  case $step in
    tests)
      for filter in gpu_dims_fwd gpu_dims_bwd; do
        timeout 240 $w96 build-w96/cudadent_tests $filter > "$out/t.log" 2>&1
        note "tests (sm80 $filter, w96): rc $? $(tail -1 "$out/t.log")"
        grep -E '^\[ FAIL' -B8 "$out/t.log" | head -40 | tee -a "$summary"
        { echo "==== $filter"; cat "$out/t.log"; } >> "$out/tests.log"
      done
      rm -f "$out/t.log" ;;
    sanitize)
      for shape in "--batch 2 --seqlen-q 257 --heads 8 --heads-kv 2 --head-dim 96 --causal" \
                   "--batch 1 --seqlen-q 200 --seqlen-k 170 --heads 4 --head-dim 96 --head-dim-v 80 --layout gapped --dtype fp16"; do
        for dir in "" "--bwd"; do
          timeout 150 $w96 compute-sanitizer --tool memcheck --error-exitcode 9 build-w96/cudadent-bench \
            $shape $dir --check --iters 1 > "$out/s.log" 2>&1
          note "memcheck ($shape $dir): rc $? $(grep 'ERROR SUMMARY' "$out/s.log" | tail -1), $(grep -c FAIL "$out/s.log") FAIL"
          { echo "==== $shape $dir"; cat "$out/s.log"; } >> "$out/sanitize.log"
        done
      done
      rm -f "$out/s.log" ;;
    time)
      for shape in "--batch 8 --seqlen-q 2048 --heads 21 --head-dim 96" \
                   "--batch 8 --seqlen-q 2048 --heads 21 --head-dim 96 --causal" \
                   "--batch 2 --seqlen-q 8192 --heads 21 --head-dim 96 --causal"; do
        for dir in "" "--bwd"; do
          for rep in 1 2; do
            for lab in base w96; do
              b="$lib build-w96-base/cudadent-bench"; [ $lab = w96 ] && b="$w96 build-w96/cudadent-bench"
              r=$(timeout 120 $b $shape --dtype bf16 $dir --iters 30 2>&1 | tail -1 | awk '{print $(NF-2), $(NF-1)}')
              note "time $lab $shape ${dir:-fwd}: ms TFLOP/s $r"
            done
          done
        done
      done ;;
    pybench)
      CUDADENT_KERNEL_FWD=sm80 CUDADENT_KERNEL_BWD=sm80 CUDADENT_LIBRARY=$PWD/build-w96/libcudadent.so.0 \
        PYTHONPATH=python timeout 420 python3 -m cudadent.bench --suite dims --backends cudadent,flash \
        --rounds 2 --no-flex --time-limit 120 --out "$out/dims80" > "$out/pybench.log" 2>&1
      note "pybench: rc $? ($out/dims80, $out/pybench.log)"
      grep -hE '^\|.*\b96\b' "$out"/dims80/*.md 2>/dev/null | head -20 | tee -a "$summary" > /dev/null ;;
    *) note "w96_run.sh: unknown step $step"; exit 2 ;;
  esac
done
