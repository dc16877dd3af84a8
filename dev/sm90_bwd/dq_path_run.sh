#!/usr/bin/env bash
# dev/sm90_bwd/dq_path_run.sh - one GPU call for the dQ path's next measurements
# (docs/kernels/sm90_bwd_wide_next.md section 6): the egress microbenchmark M0
# (docs/kernels/sm90_bwd_dq_path.md section 3; dev/sm90_bwd/dq_egress_bench.cu, built here by nvcc
# into build-egress/, its --sweep, about a minute), SM90_BWD_SKIP_DQ 3 (half the dQ bytes, dQ
# wrong: timing only) and a trace with the producer's own stamps, each against the library, into
# $OUT/{egress,half,trace}. (Session 25 ran it with a fourth step, the split dQ path, since landed
# as bwd_parts.cuh DQ_SPLIT.) Build on the workstation first (egress needs none of it):
#   JOBS=2 PREBUILD_GZ=1 dev/tools/prebuild.sh half=-DSM90_BWD_SKIP_DQ=3 \
#     "t64=-DSM90_BWD_TRACE=1 -DSM90_BWD_D128_BM80=0"
# then run with carry build-carry, build-carry-half, build-carry-t64 (~33 MB):
#   dev/sm90_bwd/dq_path_run.sh [egress] [half] [trace]   (default: all three, ~7 minutes)
set -u
cd "$(dirname "$0")/../.."
base=${OUT:-gpu-logs}
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(egress half trace)
# the M3 shapes: the wide rows, the 80-row and 64-row d128 tiles, d64
shapes='--batch 8 --seqlen-q 2048 --heads 10 --head-dim 192 --head-dim-v 128 --causal
--batch 8 --seqlen-q 2048 --heads 10 --head-dim 192 --head-dim-v 128
--batch 2 --seqlen-q 8192 --heads 8 --head-dim 256 --causal
--batch 8 --seqlen-q 2048 --heads 8 --head-dim 256
--batch 4 --seqlen-q 4096 --heads 16 --head-dim 128 --causal
--batch 8 --seqlen-q 2048 --heads 32 --head-dim 64
--batch 1 --seqlen-q 16384 --heads 16 --head-dim 128'
for step in "${steps[@]}"; do
  case $step in
    egress)
      mkdir -p $base/egress build-egress
      { nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Isrc dev/sm90_bwd/dq_egress_bench.cu \
          -o build-egress/dq_egress_bench && timeout 180 build-egress/dq_egress_bench --sweep; } \
        > $base/egress/egress.txt 2>&1 || echo "dq_path_run.sh: egress failed (rc $?): $base/egress/egress.txt" ;;
    half)
      OUT=$base/half PREBUILT=build-carry PREBUILT_VAR=build-carry-half VAR_TESTS=no_such_test \
        ABVAR_SHAPES="$shapes" timeout 200 dev/sm90_bwd/gpu_run.sh abvar ;;
    trace)
      OUT=$base/trace PREBUILT=build-carry PREBUILT_VAR=build-carry-t64 TRACE_TAGS=t64 \
        TRACE_CHECKS="--seqlen-q 1024 --heads 2 --head-dim 128 --causal;--seqlen-q 1000 --heads 2 --head-dim 192 --head-dim-v 128 --causal" \
        TRACE_SHAPES="--batch 8 --seqlen-q 2048 --heads 10 --head-dim 192 --head-dim-v 128;--batch 4 --seqlen-q 4096 --heads 16 --head-dim 128 --causal;--batch 2 --seqlen-q 8192 --heads 8 --head-dim 256 --causal" \
        timeout 200 dev/sm90_bwd/gpu_run.sh bwdtrace ;;
    *) echo "dq_path_run.sh: unknown step $step"; exit 2 ;;
  esac
done
