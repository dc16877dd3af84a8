#!/usr/bin/env bash
# dev/sm80_fwd/w256_run.sh - one GPU call for the portable forward's 8-warp W 192 / 256 tiles
# (dispatch.h CUDADENT_SM80_FWD_WIDE8; docs/kernels/sm80_fwd.md "W 192 / 256 with 8 warps"): the
# variant folder W256_VAR (default build-carry-wide8: the library at gate 1, built with
# -DCUDADENT_DEV, so that CUDADENT_SM80_FWD_TILE=large forces the large tiles on small shapes)
# checked, tested, sanitized and timed against W256_BASE (default build-carry: gate 0), every
# forward forced onto the portable path (CUDADENT_KERNEL_FWD=sm80). Build both on the workstation
# first, from the repository root (one invocation, ~20 minutes with 2 cores):
#   JOBS=2 PREBUILD_GZ=1 dev/tools/prebuild.sh wide8=-DCUDADENT_SM80_FWD_WIDE8=1
#   (build-carry/: gate 0, the release flags; build-carry-wide8/: gate 1 + -DCUDADENT_DEV, whose
#   kernels' SASS is identical to a gate-1 build without CUDADENT_DEV; ~11 MB each)
# then, with carry build-carry and build-carry-wide8:
#   dev/sm80_fwd/w256_run.sh [which] [check] [tests] [sanitize] [time]
#   (default: all five, estimated ~7 minutes: which ~1, check ~1, tests ~1, sanitize ~1.5, time
#   ~3 (64 processes of ~2.5 s: the CLI draws 16k tokens of inputs on the CPU); under the call's
#   10 but near the 8 a call should take: split it, `which check tests sanitize`, then `time`)
# into $OUT (or gpu-logs): 0-summary.txt and the logs of every step.
#   which:    ncu's kernel names (no metrics timed) of one forced-large small shape and of the
#             timed d256 / d192 shapes at 2k under the launcher's choice, base and wide8: the
#             8-warp kernels (template args ..., 128, 64, 8, ...) must be the ones that ran.
#   check:    cudadent-bench --check, forward, on the wide8 build with the large tiles forced and
#             with the launcher's choice: head dims 136..256 (W 192 and 256), causal, windows,
#             GQA / MQA, seqlen_q != seqlen_k both ways, lengths off the tiles, gapped / padded /
#             heads-first layouts, head_dim_v != head_dim, softcap (with outliers), varlen, fp16
#             and bf16, without LSE; and one shape (d256 b1 h8 s1100 unmasked: 72 large CTAs > 132
#             SMs / 2) where the launcher's own choice is the large tile.
#   tests:    the C suite's portable forward filters (gpu_dims_fwd, gpu_varlen_fwd,
#             gpu_softcap_hopper_fwd: every forward case, forced onto sm80 they run the portable
#             kernel), on the wide8 build with the large tiles forced.
#   sanitize: compute-sanitizer memcheck and racecheck, large tiles forced, on two shapes: d256
#             causal GQA with a ragged length (bf16); d192 / 128 varlen softcap gapped (fp16).
#   time:     CLI `--dtype bf16 --iters 30` forward (with LSE), base and wide8 alternated twice,
#             the dims suite's shapes (python/cudadent/bench_suites.py: 16k tokens, heads 2048 / D):
#             d256 h8 and d192 / 128 h10, seqlen 512, 2k, 8k, 16k, batch 16384 / seqlen, causal
#             and not.
set -u
cd "$(dirname "$0")/../.." || exit 1
out=${OUT:-gpu-logs}
mkdir -p "$out"
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(which check tests sanitize time)
summary="$out/0-summary.txt"
touch "$summary"
note() { echo "$*" | tee -a "$summary"; }
for step in "${steps[@]}"; do
  case $step in which|check|tests|sanitize|time) ;; *) note "w256_run.sh: unknown step $step"; exit 2 ;; esac
done
note "env: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1) $(git log -1 --format=%h 2>/dev/null)"
var=${W256_VAR:-build-carry-wide8} base=${W256_BASE:-build-carry}
note "wide8: $var, base: $base, steps: ${steps[*]}"
. dev/tools/unpack_carry.sh # unpack_carry: a carried folder's library and binaries
unpack_carry "$var" build-w256 || { note "$var incomplete (dev/tools/prebuild.sh)"; exit 1; }
unpack_carry "$base" build-w256-base || { note "$base incomplete"; exit 1; }
w8="env CUDADENT_KERNEL_FWD=sm80 LD_LIBRARY_PATH=$PWD/build-w256"
w8l="env CUDADENT_KERNEL_FWD=sm80 CUDADENT_SM80_FWD_TILE=large LD_LIBRARY_PATH=$PWD/build-w256"
lib="env CUDADENT_KERNEL_FWD=sm80 LD_LIBRARY_PATH=$PWD/build-w256-base"
# the check shapes (small: the CPU reference is the cost)
checks=(
  "--batch 2 --seqlen-q 300 --heads 8 --heads-kv 2 --head-dim 256 --causal"
  "--batch 1 --seqlen-q 200 --seqlen-k 333 --heads 4 --head-dim 256 --window 64,32 --dtype fp16"
  "--batch 2 --seqlen-q 517 --heads 2 --head-dim 192 --head-dim-v 128 --layout gapped"
  "--batch 1 --seqlen-q 333 --seqlen-k 200 --heads 3 --head-dim 136 --causal --dtype fp16"
  "--batch 1 --seqlen-q 250 --heads 4 --heads-kv 2 --head-dim 256 --head-dim-v 200 --softcap 30 --causal --layout gapped"
  "--batch 2 --seqlen-q 190 --seqlen-k 450 --heads 2 --head-dim 224 --softcap 5 --outliers --window -1,0 --dtype fp16"
  "--batch 1 --seqlen-q 129 --heads 4 --heads-kv 1 --head-dim 160 --no-lse --layout heads-first"
  "--batch 1 --seqlen-q 1 --seqlen-k 700 --heads 2 --head-dim 256 --layout padded"
  "--varlen 100:100,300:257,1:5,129:129,70:300 --heads 4 --heads-kv 2 --head-dim 256 --causal"
  "--varlen 65:65,200:130,17:40 --heads 2 --head-dim 192 --head-dim-v 128 --softcap 30 --layout gapped --dtype fp16"
)
for step in "${steps[@]}"; do
  note "---- $step"
  case $step in
    which)
      if ! command -v ncu > /dev/null; then note "which: no ncu"; continue; fi
      for run in "w8l|--batch 1 --seqlen-q 200 --heads 2 --head-dim 256 --causal" \
                 "w8|--batch 8 --seqlen-q 2048 --heads 8 --head-dim 256" \
                 "lib|--batch 8 --seqlen-q 2048 --heads 8 --head-dim 256" \
                 "w8|--batch 8 --seqlen-q 2048 --heads 10 --head-dim 192 --head-dim-v 128 --causal" \
                 "w8|--batch 1 --seqlen-q 1100 --heads 8 --head-dim 256"; do
        lab=${run%%|*} shape=${run#*|}
        case $lab in w8l) b="$w8l build-w256";; w8) b="$w8 build-w256";; *) b="$lib build-w256-base";; esac
        timeout 90 ${b% *} ncu --metrics gpu__time_duration.sum -k regex:cd_sm80_fwd -c 2 \
          ${b##* }/cudadent-bench $shape --iters 1 > "$out/n.log" 2>&1
        note "which $lab ($shape): rc $? $(grep -oE 'cd_sm80_fwd[a-z_]*kernel<[^>]*>' "$out/n.log" | sort -u | tr '\n' ' ')"
        { echo "==== $lab $shape"; cat "$out/n.log"; } >> "$out/which.log"
      done
      rm -f "$out/n.log" ;;
    check)
      # each shape with the large tiles forced and under the launcher's choice (small tiles, but
      # for the last shape: its own large-tile case)
      runs=()
      for shape in "${checks[@]}"; do runs+=("large|$shape" "choice|$shape"); done
      runs+=("choice|--batch 1 --seqlen-q 1100 --heads 8 --head-dim 256")
      for run in "${runs[@]}"; do
        mode=${run%%|*} shape=${run#*|}
        b="$w8l"; [ $mode = choice ] && b="$w8"
        timeout 120 $b build-w256/cudadent-bench $shape --check --iters 1 > "$out/c.log" 2>&1
        note "check $mode ($shape): rc $? $(grep -E ' fwd +(pass|FAIL) ' "$out/c.log" | awk '{print $(NF-3)}') $(grep -E '^ +o +max_err' "$out/c.log" | head -1 | sed 's/^ *//')"
        { echo "==== $mode $shape"; cat "$out/c.log"; } >> "$out/check.log"
      done
      rm -f "$out/c.log" ;;
    tests)
      for filter in gpu_dims_fwd gpu_varlen_fwd gpu_softcap_hopper_fwd; do
        timeout 150 $w8l build-w256/cudadent_tests $filter > "$out/t.log" 2>&1
        note "tests (sm80 $filter, wide8, large forced): rc $? $(tail -1 "$out/t.log")"
        grep -E '^\[ FAIL' -B8 "$out/t.log" | head -40 | tee -a "$summary"
        { echo "==== $filter"; cat "$out/t.log"; } >> "$out/tests.log"
      done
      rm -f "$out/t.log" ;;
    sanitize)
      for shape in "--batch 2 --seqlen-q 257 --heads 4 --heads-kv 2 --head-dim 256 --causal" \
                   "--varlen 65:65,130:100,17:40 --heads 2 --head-dim 192 --head-dim-v 128 --softcap 30 --layout gapped --dtype fp16"; do
        for tool in memcheck racecheck; do
          timeout 150 $w8l compute-sanitizer --tool $tool --error-exitcode 9 build-w256/cudadent-bench \
            $shape --check --iters 1 > "$out/s.log" 2>&1
          note "$tool ($shape): rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/s.log" | tail -1), $(grep -c FAIL "$out/s.log") FAIL"
          { echo "==== $tool $shape"; cat "$out/s.log"; } >> "$out/sanitize.log"
        done
      done
      rm -f "$out/s.log" ;;
    time)
      for dims in "--heads 8 --head-dim 256" "--heads 10 --head-dim 192 --head-dim-v 128"; do
        for s in 512 2048 8192 16384; do
          for causal in "" "--causal"; do
            shape="--batch $((16384 / s)) --seqlen-q $s $dims $causal"
            for rep in 1 2; do
              for lab in base wide8; do
                b="$lib build-w256-base/cudadent-bench"; [ $lab = wide8 ] && b="$w8 build-w256/cudadent-bench"
                r=$(timeout 60 $b $shape --dtype bf16 --iters 30 2>&1 | tee -a "$out/time.log" | tail -1 | awk '{print $(NF-2), $(NF-1)}')
                note "time $lab r$rep $shape: ms TFLOP/s $r"
              done
            done
          done
        done
      done ;;
  esac
done
note "done"
