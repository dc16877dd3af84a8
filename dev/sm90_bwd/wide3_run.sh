#!/usr/bin/env bash
# dev/sm90_bwd/wide3_run.sh - one GPU call for experiment E3 of docs/kernels/sm90_bwd_wide_next.md
# (bwd_wide3_kernel.cuh, config.cuh SM90_BWD_WIDE3: the 192 / 128 row's dense non-deterministic calls
# without softcap on a 64 x 96 tile with three MMA warpgroups; the library's since session 26, so
# build-carry-w3 is a variant of it, e.g. a change to the E3 kernel, and WIDE3_BASE the folder it is
# timed against: build-carry, or the 64-key kernel, k64=-DSM90_BWD_WIDE3=0). Build on the
# workstation first:
#   JOBS=2 PREBUILD_GZ=1 dev/tools/prebuild.sh w3=-DSM90_BWD_WIDE3=1 [k64=-DSM90_BWD_WIDE3=0]
# then run with carry build-carry and build-carry-w3 (~25 MB):
#   dev/sm90_bwd/wide3_run.sh [check] [tests] [sanitize] [time]   (default: all four, ~6 minutes)
# WIDE3_VAR names another variant folder in build-carry-w3's place (session 26: E3's dQ paths, a
# knob since removed, built by hand as build-carry-w3dq1 / -w3dq2, section 8 of the note):
#   WIDE3_VAR=build-carry-w3dq1 dev/sm90_bwd/wide3_run.sh check time   (~3 minutes)
# into $OUT (or gpu-logs): 0-summary.txt, the logs of every step, and time/ (gpu_run.sh abvar's).
#   check:    CLI --bwd --check forced onto sm90 on small 192 / 128 shapes (keys not a multiple of
#             96, causal, GQA / MQA, seqlen_q != seqlen_k both ways, a window, head dims below the
#             row, gapped layout, fp16 and bf16), plus two controls that keep the old kernel
#             (deterministic, softcap). A line each: the CLI's last lines (ok / FAIL per tensor).
#   tests:    the C suite's gpu_dims_hopper_bwd and gpu_bwd filters forced onto sm90.
#   sanitize: compute-sanitizer memcheck, synccheck and racecheck on small shapes.
#   time:     gpu_run.sh abvar (WIDE3_BASE, default build-carry, against build-carry-w3), bf16
#             --iters 30, the three E3 shapes, alternated twice. Runs only if check found no FAIL.
# The steps themselves: dev/sm90_bwd/variant_steps.sh (shared by the row scripts).
set -u
cd "$(dirname "$0")/../.."
name=wide3_run.sh
var=${WIDE3_VAR:-build-carry-w3} base=${WIDE3_BASE:-build-carry}
row="--head-dim 192 --head-dim-v 128"
checks=(
  "--batch 2 --seqlen-q 200 --heads 4 $row"
  "--batch 2 --seqlen-q 300 --heads 4 $row --causal"
  "--batch 2 --seqlen-q 300 --heads 4 $row --causal --dtype fp16"
  "--batch 2 --seqlen-q 256 --seqlen-k 300 --heads 8 --heads-kv 2 $row --causal"
  "--batch 1 --seqlen-q 300 --seqlen-k 200 --heads 4 --heads-kv 1 $row"
  "--batch 1 --seqlen-q 300 --seqlen-k 200 --heads 4 --heads-kv 1 $row --causal --dtype fp16"
  "--batch 1 --seqlen-q 200 --seqlen-k 500 --heads 4 $row --causal"
  "--batch 2 --seqlen-q 300 --seqlen-k 257 --heads 4 --heads-kv 2 $row --window 70,20 --dtype fp16 --layout gapped"
  "--batch 2 --seqlen-q 300 --seqlen-k 257 --heads 4 --heads-kv 2 $row --window 70,20 --layout gapped"
  "--batch 2 --seqlen-q 333 --seqlen-k 300 --heads 4 --head-dim 160 --head-dim-v 128 --layout gapped"
  "--batch 2 --seqlen-q 333 --seqlen-k 300 --heads 4 --head-dim 160 --head-dim-v 128 --causal --dtype fp16"
  "--batch 1 --seqlen-q 200 --seqlen-k 288 --heads 2 --head-dim 136 --head-dim-v 64 --causal"
  "--batch 1 --seqlen-q 96 --heads 2 $row"
  "--batch 1 --seqlen-q 1 --seqlen-k 1 --heads 2 $row"
  "--batch 2 --seqlen-q 1024 --heads 4 $row --causal"
  "--batch 1 --seqlen-q 2048 --heads 2 --heads-kv 1 $row"
  "--batch 2 --seqlen-q 300 --heads 4 $row --causal --deterministic"
  "--batch 2 --seqlen-q 300 --heads 4 $row --causal --softcap 30"
)
test_filters=(gpu_dims_hopper_bwd gpu_bwd)
sanitize_specs=(
  "memcheck:--batch 2 --seqlen-q 300 --seqlen-k 257 --heads 8 --heads-kv 2 $row --window 70,20 --dtype fp16 --layout gapped --bwd --check"
  "memcheck:--batch 2 --seqlen-q 200 --seqlen-k 300 --heads 4 --head-dim 160 --head-dim-v 128 --causal --layout gapped --bwd --check"
  "synccheck:--batch 2 --seqlen-q 300 --seqlen-k 257 --heads 8 --heads-kv 1 $row --causal --bwd"
  "racecheck:--batch 1 --seqlen-q 300 --seqlen-k 257 --heads 4 --heads-kv 2 $row --bwd"
)
# the time step's shapes (docs/kernels/sm90_bwd_wide_next.md E3: baselines on an H200 323 / 369 /
# 408-418 TFLOP/s)
time_shapes="--batch 8 --seqlen-q 2048 --heads 10 $row --causal
--batch 8 --seqlen-q 2048 --heads 10 $row
--batch 2 --seqlen-q 8192 --heads 10 $row --causal"
. dev/sm90_bwd/variant_steps.sh
run_variant_steps "$@"
