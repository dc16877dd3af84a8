#!/usr/bin/env bash
# dev/sm80_bwd/w256_bwd_run.sh - one GPU call for the portable backward's W 256 64 x 64 tile
# (dispatch.h CUDADENT_SM80_BWD_W256_M64; docs/kernels/sm80_bwd.md "W 256 with 64 x 64"): the
# variant folder W256B_VAR (default build-carry-w256m64: the library with the gate at 1) checked,
# tested, sanitized and timed against W256B_BASE (default build-carry: gate 0, the 32 x 64), every
# call forced onto the portable path (CUDADENT_KERNEL=sm80). On an H200 / H100 (227 KiB of opt-in
# shared memory a block) the variant runs the 64 x 64 at every W 256 call (head dims 200-256, or a
# head_dim_v there); on an A100 it would run the 32 x 64, as the base. The gate is read by .cu files
# only, so the CUDA flags suffice. Build both on the workstation first, from the repository root
# (one invocation, ~20 minutes with 2 cores):
#   JOBS=2 PREBUILD_GZ=1 dev/tools/prebuild.sh w256m64=-DCUDADENT_SM80_BWD_W256_M64=1
# then, with carry build-carry and build-carry-w256m64 (~11 MB each):
#   dev/sm80_bwd/w256_bwd_run.sh [which] [check] [tests] [sanitize] [time]
#   (default: all five, estimated ~7 minutes: which ~0.5, check ~1.5, tests ~2.5, sanitize ~1,
#   time ~1.5 (32 processes); each run under its own timeout; smoke-tested with fake binaries only)
# into $OUT (or gpu-logs): 0-summary.txt and the logs of every step.
#   which:    ncu's kernel names (no metrics timed) of a small d256 backward on both builds and of
#             a timed shape: the variant must show cd_sm80_bwd_main_large / cd_sm80_bwd_dq_large
#             (varlen: *_varlen_large), the base cd_sm80_bwd_main<..., 256, ...>.
#   check:    cudadent-bench --bwd --check on the variant: head dims 200-256, head_dim_v !=
#             head_dim, causal, windows, GQA / MQA, seqlen_q != seqlen_k both ways, lengths off the
#             tiles, gapped / padded layouts, softcap (with outliers), varlen (empty and 1-token
#             sequences), fp16 / bf16, deterministic.
#   tests:    the C suite's backward filters on the variant, forced onto sm80 (gpu_dims_bwd, which
#             takes gpu_dims_bwd_deterministic too; gpu_varlen_bwd; gpu_softcap_hopper_bwd, whose
#             cases forced onto sm80 run the portable kernel): their W 256 cases run the 64 x 64.
#   sanitize: compute-sanitizer memcheck and racecheck (--bwd --check) on two small W 256 shapes:
#             d256 causal GQA with a ragged length (bf16); varlen 256 / 200 softcap gapped (fp16).
#   time:     CLI `--dtype bf16 --bwd --iters 30`, base and variant alternated twice, d256 h8 at
#             b32 s512, b8 s2k, b2 s8k, b1 s16k, causal and not.
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
  case $step in which|check|tests|sanitize|time) ;; *) note "w256_bwd_run.sh: unknown step $step"; exit 2 ;; esac
done
note "env: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1) $(git log -1 --format=%h 2>/dev/null)"
var=${W256B_VAR:-build-carry-w256m64} base=${W256B_BASE:-build-carry}
note "w256m64: $var, base: $base, steps: ${steps[*]}"
. dev/tools/unpack_carry.sh # unpack_carry: a carried folder's library and binaries
unpack_carry "$var" build-w256b || { note "$var incomplete (dev/tools/prebuild.sh)"; exit 1; }
unpack_carry "$base" build-w256b-base || { note "$base incomplete"; exit 1; }
m64="env CUDADENT_KERNEL=sm80 LD_LIBRARY_PATH=$PWD/build-w256b"
lib="env CUDADENT_KERNEL=sm80 LD_LIBRARY_PATH=$PWD/build-w256b-base"
# the check shapes (small: the CPU reference is the cost); every one is a W 256 call
checks=(
  "--batch 2 --seqlen-q 300 --heads 8 --heads-kv 2 --head-dim 256 --causal"
  "--batch 2 --seqlen-q 256 --heads 4 --head-dim 256 --dtype fp16"
  "--batch 1 --seqlen-q 200 --seqlen-k 333 --heads 4 --head-dim 256 --window 64,32 --dtype fp16"
  "--batch 1 --seqlen-q 333 --seqlen-k 200 --heads 3 --heads-kv 1 --head-dim 200 --causal"
  "--batch 2 --seqlen-q 517 --heads 2 --head-dim 256 --head-dim-v 200 --layout gapped"
  "--batch 1 --seqlen-q 250 --heads 4 --heads-kv 2 --head-dim 232 --head-dim-v 256 --softcap 30 --causal --layout gapped"
  "--batch 2 --seqlen-q 190 --seqlen-k 450 --heads 2 --head-dim 224 --softcap 5 --outliers --window -1,0 --dtype fp16"
  "--batch 1 --seqlen-q 65 --seqlen-k 700 --heads 2 --head-dim 256 --layout padded"
  "--batch 2 --seqlen-q 400 --heads 4 --heads-kv 1 --head-dim 256 --causal --deterministic"
  "--varlen 100:100,300:257,1:5,129:129,70:300 --heads 4 --heads-kv 2 --head-dim 256 --causal"
  "--varlen 65:65,200:130,0:40,17:40 --heads 2 --head-dim 256 --head-dim-v 200 --softcap 30 --layout gapped --dtype fp16"
  "--varlen 200:200,33:90 --heads 4 --head-dim 248 --window 50,50 --deterministic"
)
for step in "${steps[@]}"; do
  note "---- $step"
  case $step in
    which)
      if ! command -v ncu > /dev/null; then note "which: no ncu"; continue; fi
      for run in "m64|--batch 1 --seqlen-q 200 --heads 2 --head-dim 256 --causal" \
                 "lib|--batch 1 --seqlen-q 200 --heads 2 --head-dim 256 --causal" \
                 "m64|--varlen 100:100,57:80 --heads 2 --head-dim 256 --head-dim-v 200" \
                 "m64|--batch 8 --seqlen-q 2048 --heads 8 --head-dim 256"; do
        lab=${run%%|*} shape=${run#*|}
        b="$m64 build-w256b"; [ $lab = lib ] && b="$lib build-w256b-base"
        timeout 90 ${b% *} ncu --metrics gpu__time_duration.sum -k regex:cd_sm80_bwd -c 3 \
          ${b##* }/cudadent-bench $shape --bwd --iters 1 > "$out/n.log" 2>&1
        note "which $lab ($shape): rc $? $(grep -oE 'cd_sm80_bwd_[a-z_]*<[^>]*>' "$out/n.log" | sort -u | tr '\n' ' ')"
        { echo "==== $lab $shape"; cat "$out/n.log"; } >> "$out/which.log"
      done
      rm -f "$out/n.log" ;;
    check)
      for shape in "${checks[@]}"; do
        timeout 100 $m64 build-w256b/cudadent-bench $shape --bwd --check --iters 1 > "$out/c.log" 2>&1
        note "check ($shape): rc $? $(grep -E ' bwd +(pass|FAIL) ' "$out/c.log" | awk '{print $(NF-3)}') $(grep -E 'max_err' "$out/c.log" | sed 's/^ *//' | head -4 | tr '\n' ';')"
        { echo "==== $shape"; cat "$out/c.log"; } >> "$out/check.log"
      done
      rm -f "$out/c.log" ;;
    tests)
      for filter in gpu_dims_bwd gpu_varlen_bwd gpu_softcap_hopper_bwd; do
        lim=100; [ $filter = gpu_dims_bwd ] && lim=200 # 41 + 1 cases, the CPU reference's cost
        timeout $lim $m64 build-w256b/cudadent_tests $filter > "$out/t.log" 2>&1
        note "tests (sm80 $filter, w256m64): rc $? $(tail -1 "$out/t.log")"
        grep -E '^\[ FAIL' -B8 "$out/t.log" | head -40 | tee -a "$summary"
        { echo "==== $filter"; cat "$out/t.log"; } >> "$out/tests.log"
      done
      rm -f "$out/t.log" ;;
    sanitize)
      for shape in "--batch 2 --seqlen-q 257 --heads 4 --heads-kv 2 --head-dim 256 --causal" \
                   "--varlen 65:65,130:100,17:40 --heads 2 --head-dim 256 --head-dim-v 200 --softcap 30 --layout gapped --dtype fp16"; do
        for tool in memcheck racecheck; do
          timeout 100 $m64 compute-sanitizer --tool $tool --error-exitcode 9 build-w256b/cudadent-bench \
            $shape --bwd --check --iters 1 > "$out/s.log" 2>&1
          note "$tool ($shape): rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/s.log" | tail -1), $(grep -c FAIL "$out/s.log") FAIL"
          { echo "==== $tool $shape"; cat "$out/s.log"; } >> "$out/sanitize.log"
        done
      done
      rm -f "$out/s.log" ;;
    time)
      for s in 512 2048 8192 16384; do
        for causal in "" "--causal"; do
          shape="--batch $((16384 / s)) --seqlen-q $s --heads 8 --head-dim 256 $causal"
          for rep in 1 2; do
            for lab in base m64; do
              b="$lib build-w256b-base/cudadent-bench"; [ $lab = m64 ] && b="$m64 build-w256b/cudadent-bench"
              r=$(timeout 60 $b $shape --dtype bf16 --bwd --iters 30 2>&1 | tee -a "$out/time.log" | tail -1 | awk '{print $(NF-2), $(NF-1)}')
              note "time $lab r$rep $shape: ms TFLOP/s $r"
            done
          done
        done
      done ;;
  esac
done
note "done"
