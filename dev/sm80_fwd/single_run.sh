#!/usr/bin/env bash
# dev/sm80_fwd/single_run.sh - the GPU call for dispatch.h CUDADENT_SM80_FWD_SINGLE_BUF
# (docs/kernels/sm80_fwd.md section 11: W 192 / 256's large tile as FA2's H200 configuration,
# 64 x 64, 4 warps, K / V single buffered; built in session 33, not run): the variant folder
# SINGLE_VAR (default build-carry-single: the library at gate 1, built with -DCUDADENT_DEV, so that
# CUDADENT_SM80_FWD_TILE=large forces the large tile on small shapes) checked, tested and timed
# against SINGLE_BASE (default build-carry: the library at gate 0), and SINGLE_HM (default
# build-carry-singlehm: gate 2, the same kernels with the head-major grid order) beside them,
# every forward forced onto the portable path (CUDADENT_KERNEL_FWD=sm80). Build the three on the
# workstation first, from the repository root (one invocation; ~20-30 minutes with 2 cores):
#   JOBS=2 PREBUILD_GZ=1 dev/tools/prebuild.sh single=-DCUDADENT_SM80_FWD_SINGLE_BUF=1 \
#     singlehm=-DCUDADENT_SM80_FWD_SINGLE_BUF=2
# then one call, with carry build-carry, build-carry-single and build-carry-singlehm (~47 MB;
# estimated 7-9 minutes):
#   OUT=$OUT dev/sm80_fwd/single_run.sh
# into $OUT (or gpu-logs): 0-summary.txt and the logs of every step. Steps (default: all, in this
# order; the most wanted first, so that the call's limit cuts the least wanted):
#   which:    ncu's name of the forward kernel of one launch, library, variant and hm (d256 h8 b8
#             s2048; d192 / 128 h10 b8 s2048): the variants must run cd_sm80_fwd_single_kernel.
#   check:    cudadent-bench --check on the variant with the large tile forced: ragged tails,
#             causal with seqlen_q > / < seqlen_k, sliding windows, GQA / MQA, head_dim 200 and 136
#             (PAD), head_dim_v != head_dim, softcap with outliers, varlen, fp16 and bf16, with
#             and without LSE; then two shapes where the launcher's own choice is the large tile;
#             then four of them on hm (its tile decode and LSE / O addressing).
#   tests:    the C suite's portable forward filters (gpu_dims_fwd, gpu_varlen_fwd,
#             gpu_softcap_hopper_fwd, gpu_fwd) on the variant, the large tile forced.
#   time:     CLI `--dtype bf16 --iters 30` (forward with LSE), library, variant and hm
#             alternated twice: d256 h8 b32 s512, b8 s2048, b2 s8192, causal and not (16k tokens); then
#             d192 / 128 h10 b8 s2048.
#   sanitize: compute-sanitizer racecheck and synccheck (the two barriers a key tile, the epilogue's
#             staging in sQ) on the variant, large tile forced: d256 causal GQA ragged (bf16).
# So that one 600 s call always reaches the timings: a tests filter starts only before 300 s
# (SINGLE_TESTS_UNTIL), the sanitizers only before 480 s (SINGLE_SANITIZE_UNTIL); skips are noted.
set -u
cd "$(dirname "$0")/../.." || exit 1
out=${OUT:-gpu-logs}
mkdir -p "$out"
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(which check tests time sanitize)
summary="$out/0-summary.txt"
touch "$summary"
note() { echo "$*" | tee -a "$summary"; }
for step in "${steps[@]}"; do
  case $step in which|check|tests|time|sanitize) ;; *) note "single_run.sh: unknown step $step"; exit 2 ;; esac
done
t0=$(date +%s)
# seconds after the start past which the tests' later filters and the sanitizers are skipped, so
# that one 600 s call always times
tests_until=${SINGLE_TESTS_UNTIL:-300} sanitize_until=${SINGLE_SANITIZE_UNTIL:-480}
note "env: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1) $(git log -1 --format=%h 2>/dev/null)"
var=${SINGLE_VAR:-build-carry-single} base=${SINGLE_BASE:-build-carry} hm=${SINGLE_HM:-build-carry-singlehm}
note "variant: $var, library: $base, hm: $hm, steps: ${steps[*]}"
. dev/tools/unpack_carry.sh # unpack_carry: a carried folder's library and binaries
unpack_carry "$var" build-single || { note "$var incomplete (dev/tools/prebuild.sh)"; exit 1; }
unpack_carry "$base" build-single-base || { note "$base incomplete"; exit 1; }
have_hm=1
unpack_carry "$hm" build-single-hm || { note "$hm incomplete: hm runs skipped"; have_hm=0; }
vr="env CUDADENT_KERNEL_FWD=sm80 LD_LIBRARY_PATH=$PWD/build-single"
vl="env CUDADENT_KERNEL_FWD=sm80 CUDADENT_SM80_FWD_TILE=large LD_LIBRARY_PATH=$PWD/build-single"
hr="env CUDADENT_KERNEL_FWD=sm80 LD_LIBRARY_PATH=$PWD/build-single-hm"
hl="env CUDADENT_KERNEL_FWD=sm80 CUDADENT_SM80_FWD_TILE=large LD_LIBRARY_PATH=$PWD/build-single-hm"
lib="env CUDADENT_KERNEL_FWD=sm80 LD_LIBRARY_PATH=$PWD/build-single-base"
labels=(library variant); [ $have_hm = 1 ] && labels+=(hm)
# the command prefix and binary folder of a label
run_of() { case $1 in library) echo "$lib|build-single-base" ;; variant) echo "$vr|build-single" ;; hm) echo "$hr|build-single-hm" ;; esac; }
# the check shapes (small: the CPU reference is the cost)
checks=(
  "--batch 2 --seqlen-q 300 --heads 8 --heads-kv 2 --head-dim 256 --causal"
  "--batch 1 --seqlen-q 200 --seqlen-k 333 --heads 4 --head-dim 256 --window 64,32 --dtype fp16"
  "--batch 2 --seqlen-q 600 --heads 2 --head-dim 256 --window 100,100"
  "--batch 2 --seqlen-q 517 --heads 2 --head-dim 192 --head-dim-v 128 --layout gapped"
  "--batch 1 --seqlen-q 333 --seqlen-k 200 --heads 3 --head-dim 136 --causal --dtype fp16"
  "--batch 3 --seqlen-q 400 --heads 3 --head-dim 200 --causal --no-lse"
  "--batch 2 --seqlen-q 257 --seqlen-k 700 --heads 4 --heads-kv 1 --head-dim 192 --dtype fp16"
  "--batch 1 --seqlen-q 250 --heads 4 --heads-kv 2 --head-dim 256 --head-dim-v 200 --softcap 30 --causal --layout gapped"
  "--batch 2 --seqlen-q 190 --seqlen-k 450 --heads 2 --head-dim 224 --softcap 5 --outliers --window -1,0 --dtype fp16"
  "--batch 1 --seqlen-q 1 --seqlen-k 700 --heads 2 --head-dim 256 --layout padded"
  "--varlen 100:100,300:257,1:5,129:129,70:300 --heads 4 --heads-kv 2 --head-dim 256 --causal"
  "--varlen 65:65,200:130,17:40 --heads 2 --head-dim 192 --head-dim-v 128 --softcap 30 --layout gapped --dtype fp16"
)
# the launcher's own large tile: unmasked 8 x 9 = 72 128-row CTAs > 132 SMs / 2; causal
# 4 x 17 x 5 = 340 >= 2 x 132
own=(
  "--batch 1 --seqlen-q 1100 --heads 8 --head-dim 256"
  "--batch 4 --seqlen-q 520 --heads 17 --head-dim 256 --causal"
)
timed=(
  "--batch 32 --seqlen-q 512 --heads 8 --head-dim 256"
  "--batch 32 --seqlen-q 512 --heads 8 --head-dim 256 --causal"
  "--batch 8 --seqlen-q 2048 --heads 8 --head-dim 256"
  "--batch 8 --seqlen-q 2048 --heads 8 --head-dim 256 --causal"
  "--batch 2 --seqlen-q 8192 --heads 8 --head-dim 256"
  "--batch 2 --seqlen-q 8192 --heads 8 --head-dim 256 --causal"
  "--batch 8 --seqlen-q 2048 --heads 10 --head-dim 192 --head-dim-v 128"
)
for step in "${steps[@]}"; do
  note "---- $step ($(( $(date +%s) - t0 )) s)"
  case $step in
    which)
      if ! command -v ncu > /dev/null; then note "which: no ncu"; continue; fi
      for shape in "--batch 8 --seqlen-q 2048 --heads 8 --head-dim 256" \
                   "--batch 8 --seqlen-q 2048 --heads 10 --head-dim 192 --head-dim-v 128"; do
        for lab in "${labels[@]}"; do
          x=$(run_of $lab); b=${x%|*} d=${x#*|}
          timeout 60 $b ncu --metrics gpu__time_duration.sum -k regex:cd_sm80_fwd -c 1 \
            $d/cudadent-bench $shape --dtype bf16 --iters 1 > "$out/n.log" 2>&1
          note "which $lab ($shape): rc $? $(grep -oE 'cd_sm80_fwd[a-z_]*<[^>]*>' "$out/n.log" | head -1)"
          cat "$out/n.log" >> "$out/which.log"
        done
      done
      rm -f "$out/n.log" ;;
    check)
      runs=()
      for shape in "${checks[@]}"; do runs+=("large|$shape"); done
      for shape in "${own[@]}"; do runs+=("choice|$shape"); done
      if [ $have_hm = 1 ]; then
        for i in 0 5 10; do runs+=("hm-large|${checks[$i]}"); done
        runs+=("hm-choice|${own[1]}")
      fi
      for run in "${runs[@]}"; do
        mode=${run%%|*} shape=${run#*|}
        case $mode in
          large) b="$vl" d=build-single ;; choice) b="$vr" d=build-single ;;
          hm-large) b="$hl" d=build-single-hm ;; *) b="$hr" d=build-single-hm ;;
        esac
        timeout 120 $b $d/cudadent-bench $shape --check --iters 1 > "$out/c.log" 2>&1
        note "check $mode ($shape): rc $? $(grep -E ' fwd +(pass|FAIL) ' "$out/c.log" | awk '{print $(NF-3)}') $(grep -E '^ +o +max_err' "$out/c.log" | head -1 | sed 's/^ *//')"
        { echo "==== $mode $shape"; cat "$out/c.log"; } >> "$out/check.log"
      done
      rm -f "$out/c.log" ;;
    tests)
      for filter in gpu_dims_fwd gpu_varlen_fwd gpu_softcap_hopper_fwd gpu_fwd; do
        # the time step needs ~150-200 s of the call's 600: later filters give way to it
        if [ $(( $(date +%s) - t0 )) -gt $tests_until ]; then note "tests $filter: skipped (${tests_until} s passed)"; continue; fi
        timeout 120 $vl build-single/cudadent_tests $filter > "$out/t.log" 2>&1
        note "tests (sm80 $filter, variant, large tile forced): rc $? $(tail -1 "$out/t.log")"
        grep -E '^\[ FAIL' -B8 "$out/t.log" | head -40 | tee -a "$summary"
        { echo "==== $filter"; cat "$out/t.log"; } >> "$out/tests.log"
      done
      rm -f "$out/t.log" ;;
    time)
      for shape in "${timed[@]}"; do
        for rep in 1 2; do
          for lab in "${labels[@]}"; do
            x=$(run_of $lab); b="${x%|*} ${x#*|}/cudadent-bench"
            r=$(timeout 60 $b $shape --dtype bf16 --iters 30 2>&1 | tee -a "$out/time.log" | tail -1 | awk '{print $(NF-2), $(NF-1)}')
            note "time $lab r$rep $shape: ms TFLOP/s $r"
          done
        done
      done ;;
    sanitize)
      if [ $(( $(date +%s) - t0 )) -gt $sanitize_until ]; then note "sanitize: skipped (${sanitize_until} s passed)"; continue; fi
      shape="--batch 1 --seqlen-q 200 --heads 4 --heads-kv 2 --head-dim 256 --causal"
      for tool in racecheck synccheck; do
        timeout 150 $vl compute-sanitizer --tool $tool --error-exitcode 9 build-single/cudadent-bench \
          $shape --check --iters 1 > "$out/s.log" 2>&1
        note "$tool ($shape): rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/s.log" | tail -1), $(grep -c FAIL "$out/s.log") FAIL"
        { echo "==== $tool $shape"; cat "$out/s.log"; } >> "$out/sanitize.log"
      done
      rm -f "$out/s.log" ;;
  esac
done
note "done ($(( $(date +%s) - t0 )) s)"
