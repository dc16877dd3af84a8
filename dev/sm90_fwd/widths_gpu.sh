#!/usr/bin/env bash
# widths_gpu.sh - the GPU runs of the Hopper forward's head-dim rows (issue 27: 192/128, 256, and
# every head dim rounded up to a row; docs/kernels/sm90_fwd.md section 2.5), on an H100/H200.
#   dev/sm90_fwd/widths_gpu.sh STEP...      logs under $OUT (default /tmp/sm90w-logs)
# steps:
#   build     build-w90 (CUDADENT_GPU_ARCHS=90a, Release): the library, the CLI, the C tests
#   tests     the C tests on the Hopper forward (CUDADENT_KERNEL_FWD=sm90): gpu_dims_hopper_fwd
#             (every new row, LSE and not), gpu_dims_gap_overread_fails (the wider calls now run
#             here and must fail the check), gpu_fwd and gpu_fwd_nolse (d64/d128 unchanged);
#             then gpu_dims and gpu_dims_hopper_fwd under the default dispatch
#   check     cudadent-bench --check of the FA3-suite shapes of each new width, sm90 forced
#   sanitize  compute-sanitizer memcheck, racecheck, synccheck on small shapes of each new row
#   time      cudadent-bench timings (bf16, LSE and no LSE), sm90 against sm80, FA3-suite shapes
#   suite     python -m cudadent.bench --suite dims (cuDNN side by side; needs torch)
set -u
out=${OUT:-/tmp/sm90w-logs}; mkdir -p "$out"
B=build-w90; T=$B/tests/cudadent_tests; X=$B/cudadent-bench
note() { echo "$*" | tee -a "$out/summary.txt"; }
# FA3-suite shapes (16k tokens, heads = 2048 / head_dim): "name|flags"
shapes=(
  "d96 2k|--batch 8 --seqlen 2048 --heads 21 --head-dim 96"
  "d96 8k causal|--batch 2 --seqlen 8192 --heads 21 --head-dim 96 --causal"
  "d256 2k|--batch 8 --seqlen 2048 --heads 8 --head-dim 256"
  "d256 8k causal|--batch 2 --seqlen 8192 --heads 8 --head-dim 256 --causal"
  "d192v128 2k|--batch 8 --seqlen 2048 --heads 10 --head-dim 192 --head-dim-v 128"
  "d192v128 8k causal|--batch 2 --seqlen 8192 --heads 10 --head-dim 192 --head-dim-v 128 --causal"
  "d80 2k|--batch 8 --seqlen 2048 --heads 25 --head-dim 80"
  "d160 2k causal|--batch 8 --seqlen 2048 --heads 12 --head-dim 160 --causal"
)
for step in "$@"; do
  echo "=== $step ($(date +%T))"
  case $step in
    build)
      { cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCUDADENT_GPU_ARCHS=90a &&
        cmake --build $B -j16; } > "$out/build.log" 2>&1
      note "build rc $? $(grep -c 'spill' "$out/build.log") spill lines" ;;
    tests)
      for f in gpu_dims_hopper_fwd gpu_dims_gap_overread_fails gpu_fwd; do
        CUDADENT_KERNEL_FWD=sm90 timeout 600 $T $f > "$out/tests-sm90-$f.log" 2>&1
        note "sm90 forced $f: rc $? $(tail -1 "$out/tests-sm90-$f.log")"
      done
      for f in gpu_dims_hopper_fwd gpu_dims_fwd gpu_dims_bwd; do
        timeout 600 $T $f > "$out/tests-default-$f.log" 2>&1
        note "default $f: rc $? $(tail -1 "$out/tests-default-$f.log")"
      done ;;
    check)
      for s in "${shapes[@]}"; do
        for lse in "" "--no-lse"; do
          r=$(CUDADENT_KERNEL_FWD=sm90 timeout 300 $X ${s#*|} $lse --check --iters 3 2>&1 | tail -2 | tr '\n' ' ')
          note "check ${s%%|*} $lse: $r"
        done
      done ;;
    sanitize)
      for tool in memcheck racecheck synccheck; do
        for sh in "--head-dim 256 --seqlen-q 200 --seqlen-k 300 --heads 4 --heads-kv 2 --causal" \
                  "--head-dim 256 --seqlen-q 300 --seqlen-k 130 --heads 2 --heads-kv 1 --window 33,7 --no-lse --dtype fp16" \
                  "--head-dim 192 --head-dim-v 128 --seqlen-q 300 --seqlen-k 257 --heads 8 --heads-kv 1 --causal" \
                  "--head-dim 192 --head-dim-v 128 --seqlen-q 200 --seqlen-k 300 --heads 4 --no-lse --dtype fp16" \
                  "--head-dim 96 --seqlen-q 200 --seqlen-k 300 --heads 4 --heads-kv 2 --causal --layout gapped" \
                  "--head-dim 8 --head-dim-v 256 --seqlen-q 130 --seqlen-k 130 --heads 2 --layout gapped"; do
          CUDADENT_KERNEL_FWD=sm90 timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 \
            $X --batch 2 $sh --iters 1 > "$out/san.log" 2>&1
          note "$tool ($sh): rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/san.log" | tail -1)"
          { echo "==== $tool $sh"; cat "$out/san.log"; } >> "$out/sanitize.log"
        done
      done ;;
    time)
      for s in "${shapes[@]}"; do
        for lse in "" "--no-lse"; do
          for k in sm90 sm80; do
            r=$(CUDADENT_KERNEL_FWD=$k timeout 300 $X ${s#*|} $lse --iters 50 2>&1 | tail -1)
            note "time $k ${s%%|*} $lse: $r"
          done
        done
      done ;;
    suite)
      PYTHONPATH=python CUDADENT_LIBRARY=$PWD/$B/libcudadent.so timeout 900 \
        python -m cudadent.bench --suite dims --out "$out" > "$out/suite.log" 2>&1
      note "suite dims rc $? (table: $out/*.md)" ;;
    *) echo "unknown step $step" ;;
  esac
done
