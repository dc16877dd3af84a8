#!/usr/bin/env bash
# dev/sm90_bwd/diag_run.sh - one GPU call for the two dead-block skips of the Hopper backward
# (config.cuh SM90_BWD_DIAG_SKIP, docs/kernels/sm90_bwd_next.md section 6; SM90_BWD_WIDE3_DIAG_SKIP,
# docs/kernels/sm90_bwd_wide_next.md section 11): build-carry is the library, DIAG_VAR (default
# build-carry-diag) the variant with both knobs at 1 (they change disjoint kernels: the narrow rows'
# 64-row tile at d128 / d96, and E3). Build on the workstation first:
#   JOBS=2 PREBUILD_GZ=1 dev/tools/prebuild.sh "diag=-DSM90_BWD_DIAG_SKIP=1 -DSM90_BWD_WIDE3_DIAG_SKIP=1"
# then, carrying build-carry and build-carry-diag:
#   OUT=$OUT dev/sm90_bwd/diag_run.sh [check] [probe]     (check ~7-8 minutes, probe ~2)
#   check: gpu_run.sh sanitizevar (dead halves of every kind: keys past seqlen_k, seqlen_q !=
#          seqlen_k, GQA, a window, d96, softcap, deterministic; and an E3 causal shape), then
#          abvar: the variant's test filters forced onto sm90, then the predicted shapes, library /
#          variant alternated twice (sections 6 and 11's prediction tables).
#   probe: section 6's wave-tail probe (b1 16k d128 h16 / h32 / h33, b1 2k h32 / h33; the 80-row
#          kernels, identical in both builds: pool the four readings of a shape).
# Each step writes into $OUT/<step>/ (gpu_run.sh's 0-summary.txt and logs.tar.gz).
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-logs}
var=${DIAG_VAR:-build-carry-diag}
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(check)
nl=$'\n'
for step in "${steps[@]}"; do
  case $step in
    check)
      OUT=$out/check PREBUILT=build-carry PREBUILT_VAR=$var \
        SANITIZEVAR_SHAPES="--batch 2 --seqlen-q 200 --seqlen-k 300 --heads 4 --heads-kv 2 --head-dim 128 --causal${nl}--batch 2 --seqlen-q 300 --seqlen-k 200 --heads 4 --heads-kv 1 --head-dim 96 --causal --layout gapped --dtype fp16${nl}--batch 1 --seqlen-q 333 --seqlen-k 450 --heads 4 --heads-kv 2 --head-dim 128 --window 70,0 --softcap 30 --deterministic${nl}--batch 1 --seqlen-q 300 --heads 2 --head-dim 192 --head-dim-v 128 --causal" \
        VAR_TESTS="gpu_bwd gpu_dims_hopper_bwd gpu_softcap_hopper_bwd gpu_varlen_bwd" \
        ABVAR_SHAPES="--batch 32 --seqlen-q 512 --heads 16 --head-dim 128 --causal${nl}--batch 16 --seqlen-q 1024 --heads 16 --head-dim 128 --causal${nl}--batch 8 --seqlen-q 2048 --heads 16 --head-dim 128 --causal${nl}--batch 4 --seqlen-q 4096 --heads 16 --head-dim 128 --causal${nl}--batch 4 --seqlen-q 4096 --heads 32 --heads-kv 8 --head-dim 128 --causal${nl}--batch 32 --seqlen-q 512 --heads 21 --head-dim 96 --causal${nl}--batch 8 --seqlen-q 2048 --heads 16 --head-dim 128${nl}--batch 8 --seqlen-q 2048 --heads 16 --head-dim 64 --causal${nl}--batch 32 --seqlen-q 512 --heads 10 --head-dim 192 --head-dim-v 128 --causal${nl}--batch 16 --seqlen-q 1024 --heads 10 --head-dim 192 --head-dim-v 128 --causal${nl}--batch 8 --seqlen-q 2048 --heads 10 --head-dim 192 --head-dim-v 128 --causal${nl}--batch 8 --seqlen-q 2048 --heads 10 --head-dim 192 --head-dim-v 128" \
        timeout 540 dev/sm90_bwd/gpu_run.sh sanitizevar abvar ;;
    probe)
      OUT=$out/probe PREBUILT=build-carry PREBUILT_VAR=$var VAR_TESTS=gpu_bwd_tile80 \
        ABVAR_SHAPES="--batch 1 --seqlen-q 16384 --heads 16 --head-dim 128${nl}--batch 1 --seqlen-q 16384 --heads 32 --head-dim 128${nl}--batch 1 --seqlen-q 16384 --heads 33 --head-dim 128${nl}--batch 1 --seqlen-q 2048 --heads 32 --head-dim 128${nl}--batch 1 --seqlen-q 2048 --heads 33 --head-dim 128" \
        timeout 200 dev/sm90_bwd/gpu_run.sh abvar ;;
    *) echo "diag_run.sh: unknown step $step"; exit 2 ;;
  esac
done
