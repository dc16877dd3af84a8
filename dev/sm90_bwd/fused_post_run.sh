#!/usr/bin/env bash
# dev/sm90_bwd/fused_post_run.sh - one GPU call for the fused post of the Hopper backward
# (docs/kernels/sm90_bwd_next.md experiment 8; config.cuh SM90_BWD_FUSED_POST, a dev knob: the narrow
# rows' dense non-deterministic calls, softcap included, convert dQ inside the main kernel,
# bwd_fused_post.cuh, and launch no post kernel). build-carry is the library, FP_VAR the variant.
# Build on the workstation first (two folders, ~22 MB gzipped, fit one call's carry):
#   JOBS=2 PREBUILD_GZ=1 dev/tools/prebuild.sh fpost=-DSM90_BWD_FUSED_POST=1
# then run with carry build-carry and build-carry-fpost, in two calls (each under a call's 10
# minutes; the times are estimates):
#   dev/sm90_bwd/fused_post_run.sh check tests        (~5 minutes)
#   dev/sm90_bwd/fused_post_run.sh sanitize time      (~7 minutes; time runs only if a check
#                                                      step in the same call found no FAIL, so
#                                                      run check first there too if in doubt)
# into $OUT (or gpu-logs): 0-summary.txt, the logs of every step, and time/ (gpu_run.sh abvar's).
#   check:    CLI --bwd --check forced onto sm90 on the covered kernels: d64 (128-row tile), d96,
#             d128 (64-row tile and, non-causal from 4096 queries, the 80-row tile), head dims
#             below the row's, causal, windows, GQA / MQA (more than 256 tiles a CTA: a second
#             counting round), seqlen_q != seqlen_k both ways (seqlen_q > seqlen_k causal: query
#             blocks no key block adds to, written by key block 0), gapped layout, lengths not
#             multiples of the tiles, fp16 and bf16, softcap (d64, d96, d128), 1 x 1; controls
#             that keep the post kernel: deterministic (ascending / rotated turns), varlen, a wide
#             row. A line each: the CLI's last lines (ok / FAIL per tensor).
#   tests:    gpu_bwd, gpu_dims_hopper_bwd, gpu_softcap_hopper_bwd, gpu_varlen_bwd, forced onto sm90.
#   sanitize: compute-sanitizer memcheck (causal MQA with zero tiles, d64 window gapped, 80-row
#             tile), racecheck and synccheck (small causal GQA).
#   time:     gpu_run.sh abvar (FP_BASE, default build-carry, against FP_VAR, default
#             build-carry-fpost; its var_tests: gpu_dims_hopper_bwd forced onto sm90), bf16 --iters
#             30, the eight shapes below, alternated twice. Runs only if check found no FAIL.
# The steps themselves: dev/sm90_bwd/variant_steps.sh (shared by the row scripts).
set -u
cd "$(dirname "$0")/../.."
name=fused_post_run.sh
var=${FP_VAR:-build-carry-fpost} base=${FP_BASE:-build-carry}
checks=(
  "--batch 2 --seqlen-q 300 --heads 4 --head-dim 128"
  "--batch 2 --seqlen-q 300 --heads 4 --head-dim 128 --causal --dtype fp16"
  "--batch 2 --seqlen-q 300 --seqlen-k 100 --heads 4 --heads-kv 2 --head-dim 128 --causal"
  "--batch 1 --seqlen-q 100 --seqlen-k 333 --heads 4 --head-dim 120 --causal --layout gapped"
  "--batch 2 --seqlen-q 300 --seqlen-k 257 --heads 8 --heads-kv 2 --head-dim 128 --window 70,20 --dtype fp16 --layout gapped"
  "--batch 1 --seqlen-q 2048 --heads 16 --heads-kv 1 --head-dim 128 --causal"
  "--batch 1 --seqlen-q 2100 --seqlen-k 700 --heads 16 --heads-kv 1 --head-dim 128"
  "--batch 1 --seqlen-q 4100 --seqlen-k 1000 --heads 2 --head-dim 128"
  "--batch 1 --seqlen-q 4096 --seqlen-k 4133 --heads 4 --heads-kv 2 --head-dim 112 --dtype fp16 --layout gapped"
  "--batch 2 --seqlen-q 300 --heads 4 --head-dim 64"
  "--batch 2 --seqlen-q 333 --seqlen-k 100 --heads 4 --heads-kv 1 --head-dim 64 --causal --dtype fp16"
  "--batch 1 --seqlen-q 200 --seqlen-k 500 --heads 4 --head-dim 48 --head-dim-v 64 --window 100,0 --layout gapped"
  "--batch 1 --seqlen-q 4500 --heads 8 --heads-kv 1 --head-dim 64 --causal"
  "--batch 2 --seqlen-q 300 --heads 4 --heads-kv 2 --head-dim 96 --causal"
  "--batch 1 --seqlen-q 300 --seqlen-k 200 --heads 4 --heads-kv 1 --head-dim 80 --causal --dtype fp16"
  "--batch 2 --seqlen-q 300 --seqlen-k 257 --heads 4 --heads-kv 2 --head-dim 88 --window 70,20 --layout gapped"
  "--batch 2 --seqlen-q 300 --heads 4 --heads-kv 2 --head-dim 128 --causal --softcap 30"
  "--batch 2 --seqlen-q 300 --seqlen-k 200 --heads 4 --head-dim 64 --softcap 30 --dtype fp16"
  "--batch 2 --seqlen-q 300 --heads 4 --head-dim 96 --causal --softcap 30"
  "--batch 1 --seqlen-q 1 --seqlen-k 1 --heads 2 --head-dim 128"
  "--batch 1 --seqlen-q 1 --seqlen-k 1 --heads 2 --head-dim 64 --causal --dtype fp16"
  "--batch 1 --seqlen-q 64 --heads 2 --head-dim 96"
  "--batch 2 --seqlen-q 300 --heads 4 --heads-kv 2 --head-dim 128 --causal --deterministic"
  "--batch 1 --seqlen-q 1000 --seqlen-k 300 --heads 4 --heads-kv 2 --head-dim 64 --deterministic --dtype fp16"
  "--varlen 1:1,127:127,129:129,0:5,255:255,64:0,300:300 --heads 4 --heads-kv 2 --head-dim 128 --causal --layout gapped"
  "--batch 2 --seqlen-q 300 --heads 4 --head-dim 192 --head-dim-v 128 --causal"
)
test_filters=(gpu_bwd gpu_dims_hopper_bwd gpu_softcap_hopper_bwd gpu_varlen_bwd)
sanitize_specs=(
  "memcheck:--batch 2 --seqlen-q 300 --seqlen-k 100 --heads 8 --heads-kv 1 --head-dim 128 --causal --dtype fp16 --layout gapped --bwd --check"
  "memcheck:--batch 1 --seqlen-q 200 --seqlen-k 300 --heads 4 --heads-kv 2 --head-dim 64 --window 70,20 --layout gapped --bwd --check"
  "memcheck:--batch 1 --seqlen-q 4100 --seqlen-k 300 --heads 2 --head-dim 128 --bwd --check"
  "racecheck:--batch 1 --seqlen-q 300 --seqlen-k 257 --heads 4 --heads-kv 2 --head-dim 128 --causal --bwd"
  "synccheck:--batch 2 --seqlen-q 300 --seqlen-k 257 --heads 8 --heads-kv 2 --head-dim 128 --causal --bwd"
)
# the time step's shapes (docs/kernels/sm90_bwd_next.md experiment 8 has the prediction for each)
time_shapes="--batch 32 --seqlen-q 512 --heads 16 --head-dim 128
--batch 16 --seqlen-q 1024 --heads 16 --head-dim 128 --causal
--batch 8 --seqlen-q 2048 --heads 16 --head-dim 128
--batch 4 --seqlen-q 4096 --heads 16 --head-dim 128 --causal
--batch 1 --seqlen-q 16384 --heads 16 --head-dim 128
--batch 32 --seqlen-q 512 --heads 32 --head-dim 64
--batch 8 --seqlen-q 2048 --heads 32 --head-dim 64 --causal
--batch 32 --seqlen-q 512 --heads 21 --head-dim 96 --causal"
. dev/sm90_bwd/variant_steps.sh
run_variant_steps "$@"
