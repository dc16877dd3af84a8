#!/usr/bin/env bash
# widths_gpu.sh - the GPU runs of the Hopper backward at every head dim up to 128 (issue 27: a
# call rounded up to the d64 / d128 kernels, TMA zero-filling the columns past the real dims;
# docs/kernels/sm90_bwd.md section 2.2), on an H100/H200.
#   dev/sm90_bwd/widths_gpu.sh STEP...      logs under $OUT (default /tmp/sm90bw-logs)
# steps:
#   build     build-bw90 (CUDADENT_GPU_ARCHS=90a, Release): the library, the CLI, the C tests
#   tests     the C tests on the Hopper backward (CUDADENT_KERNEL_BWD=sm90): gpu_dims_hopper_bwd
#             (every case), gpu_dims_gap_overread_fails (its head_dim_v 128 variant now runs
#             here and must fail the check), gpu_bwd (d64 / d128 unchanged); then
#             gpu_dims_hopper_bwd and gpu_dims_bwd under the default dispatch
#   check     cudadent-bench --bwd --check (and --deterministic) of mid-size gapped shapes of the
#             new widths, sm90 forced
#   sanitize  compute-sanitizer memcheck, racecheck, synccheck on small shapes (d96 GQA causal,
#             40 / 120 window, d8 / 128 gapped), sm90 forced
#   time      cudadent-bench --bwd timings (bf16) of FA3-suite shapes, sm90 against sm80
set -u
out=${OUT:-/tmp/sm90bw-logs}; mkdir -p "$out"
B=build-bw90; T=$B/tests/cudadent_tests; X=$B/cudadent-bench
note() { echo "$*" | tee -a "$out/summary.txt"; }
# FA3-suite shapes (16k tokens, heads = 2048 / head_dim): "name|flags"
shapes=(
  "d96 2k|--batch 8 --seqlen 2048 --heads 21 --head-dim 96"
  "d96 8k causal|--batch 2 --seqlen 8192 --heads 21 --head-dim 96 --causal"
  "d80 2k|--batch 8 --seqlen 2048 --heads 25 --head-dim 80"
  "d40 2k causal|--batch 8 --seqlen 2048 --heads 51 --head-dim 40 --causal"
  "d96v64 2k GQA|--batch 8 --seqlen 2048 --heads 20 --heads-kv 4 --head-dim 96 --head-dim-v 64"
  "d128 2k (unchanged)|--batch 8 --seqlen 2048 --heads 16 --head-dim 128"
)
# checked shapes (the fp64 reference costs about 2 ns per score and column a core, ten times
# for a backward: kept to a few core-minutes each); gapped: a column read or written past the
# real dims shows
checks=(
  "d96 GQA causal|--batch 2 --seqlen 1000 --heads 4 --heads-kv 2 --head-dim 96 --causal --layout gapped"
  "d80 sq>sk|--batch 1 --seqlen-q 1000 --seqlen-k 700 --heads 4 --head-dim 80 --layout gapped"
  "d40 window|--batch 2 --seqlen 777 --heads 4 --heads-kv 1 --head-dim 40 --window 100,0 --layout gapped"
  "d96v64 causal|--batch 1 --seqlen 1000 --heads 4 --heads-kv 2 --head-dim 96 --head-dim-v 64 --causal --layout gapped"
  "d40v120 window|--batch 2 --seqlen-q 500 --seqlen-k 700 --heads 4 --heads-kv 2 --head-dim 40 --head-dim-v 120 --window 70,20 --layout gapped"
  "d128v64|--batch 2 --seqlen 600 --heads 4 --head-dim 128 --head-dim-v 64 --layout gapped"
  "d8v128 MQA|--batch 1 --seqlen 1000 --heads 8 --heads-kv 1 --head-dim 8 --head-dim-v 128 --causal --layout gapped"
)
for step in "$@"; do
  echo "=== $step ($(date +%T))"
  case $step in
    build)
      { cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCUDADENT_GPU_ARCHS=90a &&
        cmake --build $B -j16; } > "$out/build.log" 2>&1
      note "build rc $? $(grep -c 'sm90.*spill\|spill.*sm90' "$out/build.log") sm90 spill lines" ;;
    tests)
      for f in gpu_dims_hopper_bwd gpu_dims_gap_overread_fails gpu_bwd; do
        CUDADENT_KERNEL_BWD=sm90 timeout 600 $T $f > "$out/tests-sm90-$f.log" 2>&1
        note "sm90 forced $f: rc $? $(tail -1 "$out/tests-sm90-$f.log")"
      done
      for f in gpu_dims_hopper_bwd gpu_dims_bwd; do
        timeout 600 $T $f > "$out/tests-default-$f.log" 2>&1
        note "default $f: rc $? $(tail -1 "$out/tests-default-$f.log")"
      done ;;
    check)
      for s in "${checks[@]}"; do
        for det in "" "--deterministic"; do
          r=$(CUDADENT_KERNEL_BWD=sm90 timeout 300 $X ${s#*|} --dtype bf16 --bwd $det --check --iters 3 2>&1 | tail -2 | tr '\n' ' ')
          note "check ${s%%|*} $det: $r"
        done
      done ;;
    sanitize)
      for tool in memcheck racecheck synccheck; do
        for sh in "--head-dim 96 --seqlen-q 200 --seqlen-k 300 --heads 4 --heads-kv 2 --causal --layout gapped" \
                  "--head-dim 40 --head-dim-v 120 --seqlen-q 300 --seqlen-k 260 --heads 4 --heads-kv 2 --window 70,20 --dtype fp16 --layout gapped" \
                  "--head-dim 8 --head-dim-v 128 --seqlen-q 130 --seqlen-k 200 --heads 2 --heads-kv 1 --layout gapped --deterministic"; do
          CUDADENT_KERNEL_BWD=sm90 timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 \
            $X --batch 2 $sh --bwd --check --iters 1 > "$out/san.log" 2>&1
          note "$tool ($sh): rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/san.log" | tail -1)"
          { echo "==== $tool $sh"; cat "$out/san.log"; } >> "$out/sanitize.log"
        done
      done ;;
    time)
      for s in "${shapes[@]}"; do
        for k in sm90 sm80; do
          r=$(CUDADENT_KERNEL_BWD=$k timeout 300 $X ${s#*|} --dtype bf16 --bwd --iters 30 2>&1 | tail -1)
          note "time $k ${s%%|*}: $r"
        done
      done ;;
    *) echo "unknown step $step" ;;
  esac
done
