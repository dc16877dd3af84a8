#!/usr/bin/env bash
# dev/sm90_fwd/d96_run.sh - GPU calls for the Hopper forward's d96 rows (config.cuh SM90_FWD_D96;
# docs/kernels/sm90_fwd.md section 2.5, "d96 row of its own"): build-carry is the library and
# build-carry-TAG the variants (session 28 ran knob 1, BLOCK_M 128 / 128 keys, and 2, BLOCK_M 192 /
# 96 keys, against the d128 rows; 2 is the library's since). Build on the workstation first, e.g.:
#   JOBS=2 PREBUILD_GZ=1 dev/tools/prebuild.sh d96f=-DSM90_FWD_D96=1 d128=-DSM90_FWD_D96=0
# then run with carry build-carry, build-carry-d96f and build-carry-d96f2 (~36 MB), in two calls
# (each under the 10-minute limit):
#   dev/sm90_fwd/d96_run.sh check time        (~6 minutes)
#   dev/sm90_fwd/d96_run.sh tests sanitize    (~7 minutes)
# VARIANTS (default "d96f d96f2") names the variant folders' tags; into $OUT (or gpu-logs):
# 0-summary.txt and the logs of every step.
#   check:    cudadent-bench --check (the forward) forced onto sm90, each variant, on small shapes of
#             the rows: head dims 72, 80, 88, 96, head_dim_v != head_dim within 96, keys not a
#             multiple of the tiles (128, 96), causal, windows, GQA / MQA, seqlen_q != seqlen_k
#             both ways, gapped layout, fp16 and bf16, with and without LSE (--no-lse), 1 x 1, key
#             lengths past the 12 exact blocks (the lazy softmax), outliers; plus controls that keep
#             their rows (d64, d128, softcap d96, varlen d96), each under a 45 s timeout (a
#             protocol bug hangs), and the error ratio over 20 seeds of one d96 shape (the
#             library's beside it: the accuracy class, docs/kernels/sm90_fwd.md section 4.2).
#   tests:    cudadent_tests gpu_dims_hopper_fwd and gpu_fwd forced onto sm90, each variant.
#   sanitize: compute-sanitizer memcheck (window GQA fp16 gapped; head_dim_v > head_dim, no LSE),
#             racecheck (causal, LSE and not) and synccheck (causal MQA, no LSE) on small shapes,
#             each variant.
#   time:     the library against each variant, alternated twice (library, variants, library,
#             variants), a process a timing, bf16 --iters 30, forward with and without LSE on the
#             FA3-suite d96 shapes (heads 21): b8 s2k non-causal and causal, b2 s8k causal, b32 s512
#             causal. Runs only if this call's check found no failure.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-logs}
mkdir -p "$out"
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(check time)
read -r -a variants <<< "${VARIANTS:-d96f d96f2}"
summary="$out/0-summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }
note "env: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) $(git log -1 --format=%h 2>/dev/null)"
. dev/tools/unpack_carry.sh # unpack_carry: a carried folder (prebuild.sh) into a build folder
unpack() { unpack_carry "$1" "$2" || { note "$1 missing or incomplete (dev/tools/prebuild.sh)"; exit 1; }; }
unpack build-carry build-lib
for v in "${variants[@]}"; do unpack "build-carry-$v" "build-$v"; done
# the environment of a build's binaries, forced onto the Hopper forward: timeout N $(on TAG) PROGRAM ARGS
on() { echo "env CUDADENT_KERNEL_FWD=sm90 LD_LIBRARY_PATH=$PWD/build-$1"; }
checks=(
  "--batch 2 --seqlen-q 300 --heads 4 --head-dim 96"
  "--batch 2 --seqlen-q 300 --heads 4 --head-dim 96 --no-lse --dtype fp16"
  "--batch 2 --seqlen-q 257 --heads 4 --head-dim 96 --causal"
  "--batch 2 --seqlen-q 257 --heads 4 --head-dim 96 --causal --no-lse"
  "--batch 2 --seqlen-q 256 --seqlen-k 300 --heads 8 --heads-kv 2 --head-dim 80 --causal --dtype fp16"
  "--batch 1 --seqlen-q 300 --seqlen-k 200 --heads 4 --heads-kv 1 --head-dim 72 --causal --no-lse"
  "--batch 2 --seqlen-q 300 --seqlen-k 257 --heads 4 --heads-kv 2 --head-dim 88 --window 70,20 --layout gapped"
  "--batch 2 --seqlen-q 333 --seqlen-k 300 --heads 4 --head-dim 96 --head-dim-v 64 --layout gapped --dtype fp16"
  "--batch 2 --seqlen-q 300 --seqlen-k 333 --heads 4 --head-dim 72 --head-dim-v 96 --causal --no-lse --layout gapped"
  "--batch 1 --seqlen-q 200 --seqlen-k 500 --heads 4 --heads-kv 2 --head-dim 96 --head-dim-v 40 --window 64,0 --layout gapped"
  "--batch 1 --seqlen-q 1 --seqlen-k 1 --heads 2 --head-dim 96"
  "--batch 1 --seqlen-q 1 --seqlen-k 1 --heads 2 --head-dim 96 --no-lse --dtype fp16"
  "--batch 2 --seqlen-q 1024 --heads 4 --heads-kv 1 --head-dim 96 --causal --dtype fp16"
  "--batch 1 --seqlen-q 700 --seqlen-k 3000 --heads 4 --heads-kv 2 --head-dim 96"
  "--batch 1 --seqlen-q 700 --seqlen-k 3000 --heads 4 --head-dim 88 --no-lse --outliers"
  "--batch 1 --seqlen-q 2000 --heads 2 --head-dim 80 --causal --no-lse --outliers --dtype fp16"
  "--batch 2 --seqlen-q 300 --heads 4 --head-dim 64 --causal"
  "--batch 2 --seqlen-q 300 --heads 4 --head-dim 128 --no-lse"
  "--batch 2 --seqlen-q 300 --heads 4 --head-dim 96 --causal --softcap 30"
  "--varlen 0:5,17:17,300:400,129:100 --heads 4 --heads-kv 2 --head-dim 96 --causal"
)
# the time step's shapes (docs/kernels/sm90_fwd.md section 2.5: the d128 rows on an H200, package
# bench with LSE / without: non-causal 2k 481.9 / 483.5, causal 2k 449.9 / 457.3, causal 8k
# 514.5 / 523.1, causal 512 293.1 / 299.6 TFLOP/s)
time_shapes=(
  "--batch 8 --seqlen-q 2048 --heads 21 --head-dim 96"
  "--batch 8 --seqlen-q 2048 --heads 21 --head-dim 96 --causal"
  "--batch 2 --seqlen-q 8192 --heads 21 --head-dim 96 --causal"
  "--batch 32 --seqlen-q 512 --heads 21 --head-dim 96 --causal"
)
# TIME_SHAPES (one shape a line) replaces them, e.g. the short causal ones for a masked-length rule
# (config.cuh SM90_D96_MASKED_M192_MIN_SEQLEN: VARIANTS=d96m, built with
# prebuild.sh d96m=-DSM90_D96_MASKED_M192_MIN_SEQLEN=2048):
#   TIME_SHAPES=$'--batch 32 --seqlen-q 512 --heads 21 --head-dim 96 --causal\n--batch 16 --seqlen-q 1024 --heads 21 --head-dim 96 --causal'
[ -n "${TIME_SHAPES:-}" ] && mapfile -t time_shapes <<< "$TIME_SHAPES"
fails=0
for step in "${steps[@]}"; do
  note "---- $step ($(date +%T))"
  case $step in
    check)
      for v in "${variants[@]}"; do
        for shape in "${checks[@]}"; do
          timeout 45 $(on "$v") "build-$v/cudadent-bench" $shape --check --iters 2 > "$out/c.log" 2>&1
          rc=$?
          nfail=$(grep -c 'FAIL' "$out/c.log")
          [ $rc = 0 ] && [ "$nfail" = 0 ] || fails=$((fails + 1))
          note "check $v ($shape): rc $rc, $(grep -cE '\bok$' "$out/c.log") ok, $nfail FAIL"
          grep -E 'FAIL|error|Error|refused' "$out/c.log" | head -6 | tee -a "$summary"
          { echo "==== $v $shape"; cat "$out/c.log"; } >> "$out/check.log"
        done
      done
      # accuracy class: O's error over the low-precision reference's, 20 seeds, library and variants
      for lab in lib "${variants[@]}"; do
        r=$(timeout 60 $(on "$lab") "build-$lab/cudadent-bench" --batch 2 --seqlen-q 513 --heads 2 \
          --head-dim 96 --check-seeds 20 2>&1 | tail -1)
        note "seeds $lab: $r"
      done
      rm -f "$out/c.log" ;;
    tests)
      for v in "${variants[@]}"; do
        for t in gpu_dims_hopper_fwd gpu_fwd; do
          timeout 200 $(on "$v") "build-$v/cudadent_tests" $t > "$out/t.log" 2>&1
          note "tests $v (sm90 $t): rc $? $(tail -1 "$out/t.log")"
          grep -E '^\[ FAIL' -B8 "$out/t.log" | head -40 | tee -a "$summary"
          { echo "==== $v $t"; cat "$out/t.log"; } >> "$out/tests.log"
        done
      done
      rm -f "$out/t.log" ;;
    sanitize)
      for v in "${variants[@]}"; do
        for spec in "memcheck:--batch 2 --seqlen-q 300 --seqlen-k 257 --heads 8 --heads-kv 2 --head-dim 88 --window 70,20 --dtype fp16 --layout gapped --check" \
                    "memcheck:--batch 1 --seqlen-q 200 --seqlen-k 170 --heads 2 --head-dim 72 --head-dim-v 96 --causal --no-lse --layout gapped --check" \
                    "racecheck:--batch 1 --seqlen-q 300 --heads 2 --head-dim 96 --causal" \
                    "racecheck:--batch 1 --seqlen-q 300 --heads 2 --head-dim 96 --causal --no-lse" \
                    "synccheck:--batch 1 --seqlen-q 300 --seqlen-k 257 --heads 4 --heads-kv 1 --head-dim 96 --causal --no-lse"; do
          tool=${spec%%:*} shape=${spec#*:}
          timeout 150 $(on "$v") compute-sanitizer --tool "$tool" --error-exitcode 9 "build-$v/cudadent-bench" $shape \
            --iters 1 > "$out/s.log" 2>&1
          note "$tool $v ($shape): rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/s.log" | tail -1) $(grep -cE '\bok$' "$out/s.log") ok"
          { echo "==== $tool $v $shape"; cat "$out/s.log"; } >> "$out/sanitize.log"
        done
      done
      rm -f "$out/s.log" ;;
    time)
      if [ $fails != 0 ]; then note "time: skipped ($fails check shapes failed)"; continue; fi
      for shape in "${time_shapes[@]}"; do
        for lse in "" "--no-lse"; do
          for rep in 1 2; do
            for lab in lib "${variants[@]}"; do
              r=$(timeout 60 $(on "$lab") "build-$lab/cudadent-bench" $shape $lse --dtype bf16 --iters 30 2>&1 |
                tail -1 | awk '{print $(NF-2), $(NF-1)}')
              note "time $lab $shape $lse: ms TFLOP/s $r"
            done
          done
        done
      done ;;
    *) note "d96_run.sh: unknown step $step"; exit 2 ;;
  esac
done
