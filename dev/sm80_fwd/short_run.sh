#!/usr/bin/env bash
# dev/sm80_fwd/short_run.sh - the GPU calls for dispatch.h CUDADENT_SM80_FWD_WIDE8_SHORT
# (docs/kernels/sm80_fwd.md section 10: the 8-warp W 192 / 256 tile at short lengths; built in
# session 30, not run): the variant folder SHORT_VAR (default build-carry-short: the library at
# gate 1, built with -DCUDADENT_DEV, so that CUDADENT_SM80_FWD_TILE=large forces the large tiles on
# small shapes and CUDADENT_SM80_FWD_GROUP / _V_EARLY / _WARP_SKIP switch the three parts) checked,
# tested, sanitized, profiled and timed against SHORT_BASE (default build-carry: the library, gate
# 0), every forward forced onto the portable path (CUDADENT_KERNEL_FWD=sm80). Build both on the
# workstation first, from the repository root (one invocation, ~20 minutes with 2 cores):
#   JOBS=2 PREBUILD_GZ=1 dev/tools/prebuild.sh short=-DCUDADENT_SM80_FWD_WIDE8_SHORT=1
# then two calls, with carry build-carry and build-carry-short:
#   dev/sm80_fwd/short_run.sh check tests sanitize    (estimated ~6 minutes)
#   dev/sm80_fwd/short_run.sh ncu time attrib         (estimated ~6 minutes)
# into $OUT (or gpu-logs): 0-summary.txt and the logs of every step. Estimates only: not run yet.
#   check:    cudadent-bench --check, forward, on the variant: each shape with the large tiles
#             forced, once as the launcher sets the group and once with groups of 3 (batch, head)s
#             forced (uneven last groups on small grids); head dims 136-256, causal (seqlen_q >
#             seqlen_k too: rows that see no key, dead warps everywhere), sliding windows (dead
#             warp-tiles on both sides), GQA / MQA, seqlen_q != seqlen_k, ragged lengths, gapped /
#             padded / heads-first layouts, head_dim_v != head_dim, softcap (with outliers), varlen
#             (not changed by the gate: a control), fp16 and bf16, with and without LSE; then two
#             shapes where the launcher's own choice is the large tile and its groups are uneven.
#   tests:    the C suite's portable forward filters (gpu_dims_fwd, gpu_varlen_fwd,
#             gpu_softcap_hopper_fwd), on the variant with the large tiles forced, as the launcher
#             sets the group and with groups of 3.
#   sanitize: compute-sanitizer memcheck, racecheck and synccheck (the warp skip puts the softmax's
#             shuffles under a warp-uniform branch; the early V wait adds a barrier to the first
#             iteration), large tiles forced, groups of 3: d256 causal GQA with a ragged length
#             (bf16); d256 sliding window, seqlen_q != seqlen_k (fp16).
#   ncu:      one launch each of d256 h8 b32 s512 (causal and not) and b8 s2048, library and
#             variant: DRAM bytes read, L2 hit rate, duration (the L2 model of section 10: K / V
#             read from DRAM 4 / 8 times by the library's order, once by the groups).
#   time:     CLI `--dtype bf16 --iters 30`, library and variant alternated twice, with and without
#             LSE: d256 h8 b32 s512, b8 s2048, b2 s8192, causal and not (the dims suite's 16k
#             tokens); d192 / 128 h10 b32 s512, causal and not.
#   attrib:   the variant with one part off at a time (CUDADENT_SM80_FWD_GROUP=0,
#             CUDADENT_SM80_FWD_V_EARLY=0, CUDADENT_SM80_FWD_WARP_SKIP=0) and all three off (the cost
#             of the added control flow alone), twice each, with LSE: d256 h8 b32 s512 and b8 s2048,
#             causal and not.
set -u
cd "$(dirname "$0")/../.." || exit 1
out=${OUT:-gpu-logs}
mkdir -p "$out"
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(check tests sanitize ncu time attrib)
summary="$out/0-summary.txt"
touch "$summary"
note() { echo "$*" | tee -a "$summary"; }
for step in "${steps[@]}"; do
  case $step in check|tests|sanitize|ncu|time|attrib) ;; *) note "short_run.sh: unknown step $step"; exit 2 ;; esac
done
note "env: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1) $(git log -1 --format=%h 2>/dev/null)"
var=${SHORT_VAR:-build-carry-short} base=${SHORT_BASE:-build-carry}
note "variant: $var, library: $base, steps: ${steps[*]}"
. dev/tools/unpack_carry.sh # unpack_carry: a carried folder's library and binaries
unpack_carry "$var" build-short || { note "$var incomplete (dev/tools/prebuild.sh)"; exit 1; }
unpack_carry "$base" build-short-base || { note "$base incomplete"; exit 1; }
vr="env CUDADENT_KERNEL_FWD=sm80 LD_LIBRARY_PATH=$PWD/build-short"
vl="env CUDADENT_KERNEL_FWD=sm80 CUDADENT_SM80_FWD_TILE=large LD_LIBRARY_PATH=$PWD/build-short"
vl3="env CUDADENT_KERNEL_FWD=sm80 CUDADENT_SM80_FWD_TILE=large CUDADENT_SM80_FWD_GROUP=3 LD_LIBRARY_PATH=$PWD/build-short"
lib="env CUDADENT_KERNEL_FWD=sm80 LD_LIBRARY_PATH=$PWD/build-short-base"
# the check shapes (small: the CPU reference is the cost)
checks=(
  "--batch 2 --seqlen-q 300 --heads 8 --heads-kv 2 --head-dim 256 --causal"
  "--batch 1 --seqlen-q 200 --seqlen-k 333 --heads 4 --head-dim 256 --window 64,32 --dtype fp16"
  "--batch 2 --seqlen-q 600 --heads 2 --head-dim 256 --window 100,100"
  "--batch 2 --seqlen-q 517 --heads 2 --head-dim 192 --head-dim-v 128 --layout gapped"
  "--batch 1 --seqlen-q 333 --seqlen-k 200 --heads 3 --head-dim 136 --causal --dtype fp16"
  "--batch 3 --seqlen-q 400 --heads 3 --head-dim 200 --causal --no-lse"
  "--batch 1 --seqlen-q 250 --heads 4 --heads-kv 2 --head-dim 256 --head-dim-v 200 --softcap 30 --causal --layout gapped"
  "--batch 2 --seqlen-q 190 --seqlen-k 450 --heads 2 --head-dim 224 --softcap 5 --outliers --window -1,0 --dtype fp16"
  "--batch 1 --seqlen-q 129 --heads 4 --heads-kv 1 --head-dim 160 --no-lse --layout heads-first"
  "--batch 1 --seqlen-q 1 --seqlen-k 700 --heads 2 --head-dim 256 --layout padded"
  "--varlen 100:100,300:257,1:5,129:129,70:300 --heads 4 --heads-kv 2 --head-dim 256 --causal"
  "--varlen 65:65,200:130,17:40 --heads 2 --head-dim 192 --head-dim-v 128 --softcap 30 --layout gapped --dtype fp16"
)
# the launcher's own large tile: 72 large CTAs > 132 SMs / 2 unmasked (one group of 8, or groups
# of 3 forced); causal 4 x 17 x 5 = 340 large CTAs >= 2 x 132, 68 (batch, head)s in groups of 31
own=(
  "--batch 1 --seqlen-q 1100 --heads 8 --head-dim 256"
  "--batch 4 --seqlen-q 520 --heads 17 --head-dim 256 --causal"
)
for step in "${steps[@]}"; do
  note "---- $step"
  case $step in
    check)
      runs=()
      for shape in "${checks[@]}"; do runs+=("large|$shape" "large3|$shape"); done
      for shape in "${own[@]}"; do runs+=("choice|$shape" "choice3|$shape"); done
      for run in "${runs[@]}"; do
        mode=${run%%|*} shape=${run#*|}
        case $mode in
          large) b="$vl" ;; large3) b="$vl3" ;; choice) b="$vr" ;;
          *) b="env CUDADENT_KERNEL_FWD=sm80 CUDADENT_SM80_FWD_GROUP=3 LD_LIBRARY_PATH=$PWD/build-short" ;;
        esac
        timeout 120 $b build-short/cudadent-bench $shape --check --iters 1 > "$out/c.log" 2>&1
        note "check $mode ($shape): rc $? $(grep -E ' fwd +(pass|FAIL) ' "$out/c.log" | awk '{print $(NF-3)}') $(grep -E '^ +o +max_err' "$out/c.log" | head -1 | sed 's/^ *//')"
        { echo "==== $mode $shape"; cat "$out/c.log"; } >> "$out/check.log"
      done
      rm -f "$out/c.log" ;;
    tests)
      for filter in gpu_dims_fwd gpu_varlen_fwd gpu_softcap_hopper_fwd; do
        for mode in large large3; do
          b="$vl"; [ $mode = large3 ] && b="$vl3"
          timeout 150 $b build-short/cudadent_tests $filter > "$out/t.log" 2>&1
          note "tests (sm80 $filter, variant, $mode): rc $? $(tail -1 "$out/t.log")"
          grep -E '^\[ FAIL' -B8 "$out/t.log" | head -40 | tee -a "$summary"
          { echo "==== $filter $mode"; cat "$out/t.log"; } >> "$out/tests.log"
        done
      done
      rm -f "$out/t.log" ;;
    sanitize)
      for shape in "--batch 2 --seqlen-q 257 --heads 4 --heads-kv 2 --head-dim 256 --causal" \
                   "--batch 1 --seqlen-q 300 --seqlen-k 450 --heads 4 --head-dim 256 --window 70,20 --dtype fp16"; do
        for tool in memcheck racecheck synccheck; do
          timeout 150 $vl3 compute-sanitizer --tool $tool --error-exitcode 9 build-short/cudadent-bench \
            $shape --check --iters 1 > "$out/s.log" 2>&1
          note "$tool ($shape): rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/s.log" | tail -1), $(grep -c FAIL "$out/s.log") FAIL"
          { echo "==== $tool $shape"; cat "$out/s.log"; } >> "$out/sanitize.log"
        done
      done
      rm -f "$out/s.log" ;;
    ncu)
      if ! command -v ncu > /dev/null; then note "ncu: no ncu"; continue; fi
      for shape in "--batch 32 --seqlen-q 512 --heads 8 --head-dim 256" \
                   "--batch 32 --seqlen-q 512 --heads 8 --head-dim 256 --causal" \
                   "--batch 8 --seqlen-q 2048 --heads 8 --head-dim 256"; do
        for lab in library variant; do
          b="$lib build-short-base"; [ $lab = variant ] && b="$vr build-short"
          timeout 120 ${b% *} ncu --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum \
            -k regex:cd_sm80_fwd -c 1 ${b##* }/cudadent-bench $shape --dtype bf16 --iters 1 > "$out/n.log" 2>&1
          note "ncu $lab ($shape): rc $? $(grep -E 'dram__bytes_read.sum|dram__bytes_write.sum|lts__t_sector_hit_rate.pct|gpu__time_duration.sum' "$out/n.log" | awk '{print $1, $(NF-1), $NF}' | tr '\n' ' ')"
          { echo "==== $lab $shape"; cat "$out/n.log"; } >> "$out/ncu.log"
        done
      done
      rm -f "$out/n.log" ;;
    time)
      for shape in "--batch 32 --seqlen-q 512 --heads 8 --head-dim 256" \
                   "--batch 32 --seqlen-q 512 --heads 8 --head-dim 256 --causal" \
                   "--batch 8 --seqlen-q 2048 --heads 8 --head-dim 256" \
                   "--batch 8 --seqlen-q 2048 --heads 8 --head-dim 256 --causal" \
                   "--batch 2 --seqlen-q 8192 --heads 8 --head-dim 256" \
                   "--batch 2 --seqlen-q 8192 --heads 8 --head-dim 256 --causal" \
                   "--batch 32 --seqlen-q 512 --heads 10 --head-dim 192 --head-dim-v 128" \
                   "--batch 32 --seqlen-q 512 --heads 10 --head-dim 192 --head-dim-v 128 --causal"; do
        for lse in "" "--no-lse"; do
          for rep in 1 2; do
            for lab in library variant; do
              b="$lib build-short-base/cudadent-bench"; [ $lab = variant ] && b="$vr build-short/cudadent-bench"
              r=$(timeout 60 $b $shape $lse --dtype bf16 --iters 30 2>&1 | tee -a "$out/time.log" | tail -1 | awk '{print $(NF-2), $(NF-1)}')
              note "time $lab r$rep $shape $lse: ms TFLOP/s $r"
            done
          done
        done
      done ;;
    attrib)
      for shape in "--batch 32 --seqlen-q 512 --heads 8 --head-dim 256" \
                   "--batch 32 --seqlen-q 512 --heads 8 --head-dim 256 --causal" \
                   "--batch 8 --seqlen-q 2048 --heads 8 --head-dim 256" \
                   "--batch 8 --seqlen-q 2048 --heads 8 --head-dim 256 --causal"; do
        for rep in 1 2; do
          for off in none GROUP V_EARLY WARP_SKIP all; do
            case $off in
              none) e="" ;;
              all) e="CUDADENT_SM80_FWD_GROUP=0 CUDADENT_SM80_FWD_V_EARLY=0 CUDADENT_SM80_FWD_WARP_SKIP=0" ;;
              *) e="CUDADENT_SM80_FWD_$off=0" ;;
            esac
            r=$(timeout 60 $vr $e build-short/cudadent-bench $shape --dtype bf16 --iters 30 2>&1 | tee -a "$out/attrib.log" | tail -1 | awk '{print $(NF-2), $(NF-1)}')
            note "attrib off=$off r$rep $shape: ms TFLOP/s $r"
          done
          r=$(timeout 60 $lib build-short-base/cudadent-bench $shape --dtype bf16 --iters 30 2>&1 | tee -a "$out/attrib.log" | tail -1 | awk '{print $(NF-2), $(NF-1)}')
          note "attrib library r$rep $shape: ms TFLOP/s $r"
        done
      done ;;
  esac
done
note "done"
