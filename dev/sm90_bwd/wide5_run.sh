#!/usr/bin/env bash
# dev/sm90_bwd/wide5_run.sh - one GPU call for a variant of E5 (docs/kernels/sm90_bwd_wide_next.md
# sections 9, 10; bwd_wide5_kernel.cuh: the 256 / 256 row's dense non-deterministic calls without
# softcap on a 64 x 80 tile with two MMA warpgroups, the library's since session 27): the variant
# folder W5_VAR checked, tested, sanitized and timed against the library, build-carry (W5_BASE names
# another base folder). Build both on the workstation first, the variant with its dev knobs (session
# 28 ran E5's dQ paths through the bulk engine this way, section 10; removed after they lost):
#   JOBS=2 PREBUILD_GZ=1 dev/tools/prebuild.sh TAG=-DSM90_...
# then run with carry build-carry and the variant's folder (~25 MB), one variant a call:
#   W5_VAR=build-carry-TAG dev/sm90_bwd/wide5_run.sh [check] [tests] [sanitize] [time]
#   (default: all four, ~6 minutes; time reruns gpu_dims_hopper_bwd as gpu_run.sh abvar's gate)
# into $OUT (or gpu-logs): 0-summary.txt, the logs of every step, and time/ (gpu_run.sh abvar's).
#   check:    CLI --bwd --check forced onto sm90 on small shapes of the row (keys not a multiple of
#             80, causal, GQA / MQA, seqlen_q != seqlen_k both ways, a window, head dims 200 / 232
#             and head_dim_v below head_dim, gapped layout, fp16 and bf16, 1 x 1), plus two controls
#             that keep the 64-key kernel (deterministic, softcap), each under a 60 s timeout (a
#             protocol bug hangs). A line each: the CLI's last lines (ok / FAIL per tensor).
#   tests:    the C suite's gpu_dims_hopper_bwd and gpu_bwd forced onto sm90.
#   sanitize: compute-sanitizer memcheck (window, fp16, gapped, GQA; head dims 232 / 200), synccheck
#             (causal MQA) and racecheck (GQA) on small shapes; racecheck's reported source lines
#             are listed (expected: only the LSE2 / delta rows' loads, docs/kernels/sm90_bwd.md
#             section 6, bwd_wide5_parts.cuh cd_sm90_lds_f32).
#   time:     gpu_run.sh abvar (W5_BASE against W5_VAR; its var tests: gpu_dims_hopper_bwd forced
#             onto sm90), bf16 --iters 30, the three d256 shapes, alternated twice. Runs only if
#             check found no FAIL.
# The steps themselves: dev/sm90_bwd/variant_steps.sh (shared by the row scripts).
set -u
cd "$(dirname "$0")/../.."
name=wide5_run.sh
var=${W5_VAR:?W5_VAR: the variant folder, e.g. build-carry-w5dq1} base=${W5_BASE:-build-carry}
row="--head-dim 256"
checks=(
  "--batch 2 --seqlen-q 150 --heads 4 $row"
  "--batch 2 --seqlen-q 257 --heads 4 $row --causal"
  "--batch 2 --seqlen-q 300 --heads 4 $row --causal --dtype fp16"
  "--batch 2 --seqlen-q 256 --seqlen-k 300 --heads 8 --heads-kv 2 $row --causal"
  "--batch 1 --seqlen-q 300 --seqlen-k 200 --heads 4 --heads-kv 1 $row --causal --dtype fp16"
  "--batch 1 --seqlen-q 200 --seqlen-k 500 --heads 4 $row --causal"
  "--batch 2 --seqlen-q 300 --seqlen-k 257 --heads 4 --heads-kv 2 $row --window 70,20 --layout gapped"
  "--batch 2 --seqlen-q 333 --seqlen-k 300 --heads 4 --head-dim 200 --layout gapped --dtype fp16"
  "--batch 2 --seqlen-q 300 --seqlen-k 333 --heads 4 --head-dim 232 --head-dim-v 200 --causal"
  "--batch 2 --seqlen-q 240 --heads 4 --head-dim 256 --head-dim-v 192 --causal --layout gapped"
  "--batch 1 --seqlen-q 80 --heads 2 $row"
  "--batch 1 --seqlen-q 1 --seqlen-k 1 --heads 2 $row"
  "--batch 2 --seqlen-q 1024 --heads 4 --heads-kv 1 $row --causal"
  "--batch 2 --seqlen-q 300 --heads 4 $row --causal --deterministic"
  "--batch 2 --seqlen-q 300 --heads 4 $row --causal --softcap 30"
)
test_filters=(gpu_dims_hopper_bwd gpu_bwd)
sanitize_specs=(
  "memcheck:--batch 2 --seqlen-q 300 --seqlen-k 257 --heads 8 --heads-kv 2 $row --window 70,20 --dtype fp16 --layout gapped --bwd --check"
  "memcheck:--batch 1 --seqlen-q 200 --seqlen-k 170 --heads 2 --head-dim 232 --head-dim-v 200 --causal --layout gapped --bwd --check"
  "synccheck:--batch 1 --seqlen-q 300 --seqlen-k 257 --heads 4 --heads-kv 1 $row --causal --bwd"
  "racecheck:--batch 1 --seqlen-q 300 --seqlen-k 257 --heads 4 --heads-kv 2 $row --bwd"
)
# the time step's shapes (docs/kernels/sm90_bwd_wide_next.md section 9: the library's E5 on an
# H200, CLI h8 bf16: b8 2k 434 TFLOP/s, causal b8 2k 373, causal b2 8k 457-483)
time_shapes="--batch 8 --seqlen-q 2048 --heads 8 $row
--batch 8 --seqlen-q 2048 --heads 8 $row --causal
--batch 2 --seqlen-q 8192 --heads 8 $row --causal"
. dev/sm90_bwd/variant_steps.sh
run_variant_steps "$@"
