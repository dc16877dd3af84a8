#!/usr/bin/env bash
# dev/sm90_bwd/d96_run.sh - one GPU call for the 96 / 96 row of the Hopper backward
# (docs/kernels/sm90_bwd.md section 2.2b; config.cuh SM90_BWD_D96, a dev knob: calls whose head dims
# are both <= 96 and not both <= 64 on the narrow kernel at D = 96 instead of the 128 / 128 row's
# over zero-filled columns; knob 1: a 2-stage Q / dO ring, FA3's; 2: 4 stages, the library's since
# session 28). build-carry is the library, D96_VAR a variant (session 28: build-carry-d96a / -d96b,
# knob 1 / 2, against the 128 row). Build on the workstation first, e.g.:
#   JOBS=2 PREBUILD_GZ=1 dev/tools/prebuild.sh d96a=-DSM90_BWD_D96=1 d96b=-DSM90_BWD_D96=2
# then run with carry build-carry, build-carry-d96a and build-carry-d96b (~36 MB), in three calls
# (each well under a call's 10 minutes; the times are estimates):
#   dev/sm90_bwd/d96_run.sh check tests                          (~4 minutes)
#   dev/sm90_bwd/d96_run.sh sanitize time                        (~6 minutes)
#   D96_VAR=build-carry-d96b dev/sm90_bwd/d96_run.sh check time  (the other variant, ~5 minutes)
# (no step named: all four, ~10 minutes, too close to a call's limit).
# into $OUT (or gpu-logs): 0-summary.txt, the logs of every step, and time/ (gpu_run.sh abvar's).
#   check:    CLI --bwd --check forced onto sm90 on small shapes of the row: head dims 72, 80, 88,
#             96, head_dim_v != head_dim both ways, keys not a multiple of 128, causal, windows,
#             GQA / MQA, seqlen_q != seqlen_k both ways, gapped layout, fp16 and bf16, 1 x 1, both
#             deterministic modes (the turn order, the rotated walk), softcap, varlen (plain and
#             softcap); plus controls that keep the old kernels (deterministic softcap: the 128
#             row; head dims 104 and 64). A line each: the CLI's last lines (ok / FAIL per tensor).
#   tests:    the C suite's gpu_dims_hopper_bwd (its cases 05-08, 14 and 18 are the row's),
#             gpu_bwd, gpu_softcap_hopper_bwd (case 04: d96 softcap) and gpu_varlen_bwd (the d96
#             cases), forced onto sm90.
#   sanitize: compute-sanitizer memcheck (window, fp16, gapped, GQA; 80 / 40; deterministic; varlen),
#             synccheck (causal MQA) and racecheck (GQA) on small shapes.
#   time:     gpu_run.sh abvar (D96_BASE, default build-carry, against D96_VAR, default
#             build-carry-d96a; its var_tests: gpu_dims_hopper_bwd forced onto sm90), bf16 --iters
#             30, the four d96 shapes, alternated twice. Runs only if check found no FAIL.
# The steps themselves: dev/sm90_bwd/variant_steps.sh (shared by the row scripts).
set -u
cd "$(dirname "$0")/../.."
name=d96_run.sh
var=${D96_VAR:-build-carry-d96a} base=${D96_BASE:-build-carry}
row="--head-dim 96"
checks=(
  "--batch 2 --seqlen-q 200 --heads 4 $row"
  "--batch 2 --seqlen-q 300 --heads 4 $row --causal"
  "--batch 2 --seqlen-q 300 --heads 4 $row --causal --dtype fp16"
  "--batch 2 --seqlen-q 256 --seqlen-k 300 --heads 8 --heads-kv 2 $row --causal"
  "--batch 1 --seqlen-q 300 --seqlen-k 200 --heads 4 --heads-kv 1 --head-dim 80 --causal --dtype fp16"
  "--batch 1 --seqlen-q 200 --seqlen-k 500 --heads 4 --head-dim 72 --causal"
  "--batch 2 --seqlen-q 300 --seqlen-k 257 --heads 4 --heads-kv 2 --head-dim 88 --window 70,20 --layout gapped"
  "--batch 2 --seqlen-q 300 --seqlen-k 257 --heads 4 --heads-kv 2 $row --window 70,20 --dtype fp16 --layout gapped"
  "--batch 2 --seqlen-q 333 --seqlen-k 300 --heads 4 --head-dim 96 --head-dim-v 72 --layout gapped --dtype fp16"
  "--batch 2 --seqlen-q 300 --seqlen-k 333 --heads 4 --head-dim 64 --head-dim-v 96 --causal"
  "--batch 1 --seqlen-q 200 --seqlen-k 288 --heads 2 --head-dim 80 --head-dim-v 40 --causal --layout gapped"
  "--batch 1 --seqlen-q 1 --seqlen-k 1 --heads 2 $row"
  "--batch 1 --seqlen-q 64 --heads 2 $row"
  "--batch 2 --seqlen-q 1024 --heads 4 --heads-kv 1 $row --causal"
  "--batch 1 --seqlen-q 2048 --heads 2 --heads-kv 1 $row"
  "--batch 2 --seqlen-q 300 --heads 4 $row --causal --deterministic"
  "--batch 1 --seqlen-q 1000 --seqlen-k 300 --heads 4 --heads-kv 2 --head-dim 88 --deterministic --dtype fp16"
  "--batch 2 --seqlen-q 300 --heads 4 --heads-kv 2 $row --causal --softcap 30"
  "--varlen 1:1,127:127,129:129,0:5,255:255,64:0,300:300 --heads 4 --heads-kv 2 $row --causal --layout gapped"
  "--varlen 100:150,300:200,77:77 --heads 4 --head-dim 80 --head-dim-v 96 --softcap 30 --dtype fp16"
  "--batch 2 --seqlen-q 300 --heads 4 $row --causal --deterministic --softcap 30"
  "--batch 2 --seqlen-q 300 --heads 4 --head-dim 104 --causal"
  "--batch 2 --seqlen-q 300 --heads 4 --head-dim 64 --causal"
)
test_filters=(gpu_dims_hopper_bwd gpu_bwd gpu_softcap_hopper_bwd gpu_varlen_bwd)
sanitize_specs=(
  "memcheck:--batch 2 --seqlen-q 300 --seqlen-k 257 --heads 8 --heads-kv 2 $row --window 70,20 --dtype fp16 --layout gapped --bwd --check"
  "memcheck:--batch 1 --seqlen-q 200 --seqlen-k 300 --heads 4 --head-dim 80 --head-dim-v 40 --causal --layout gapped --bwd --check"
  "memcheck:--batch 1 --seqlen-q 300 --heads 4 --heads-kv 2 $row --causal --deterministic --bwd --check"
  "memcheck:--varlen 1:1,127:127,129:129,0:5,300:300 --heads 4 --heads-kv 2 --head-dim 88 --causal --layout gapped --bwd --check"
  "synccheck:--batch 2 --seqlen-q 300 --seqlen-k 257 --heads 8 --heads-kv 1 $row --causal --bwd"
  "racecheck:--batch 1 --seqlen-q 300 --seqlen-k 257 --heads 4 --heads-kv 2 $row --bwd"
)
# the time step's shapes (docs/kernels/sm90_bwd.md section 2.2b: today's 128 row on an H200, package
# bench: b8 2k 396.8 TFLOP/s, causal b8 2k 347.2, causal b2 8k 409.1, causal b32 512 178.5)
time_shapes="--batch 8 --seqlen-q 2048 --heads 21 $row
--batch 8 --seqlen-q 2048 --heads 21 $row --causal
--batch 2 --seqlen-q 8192 --heads 21 $row --causal
--batch 32 --seqlen-q 512 --heads 21 $row --causal"
. dev/sm90_bwd/variant_steps.sh
run_variant_steps "$@"
