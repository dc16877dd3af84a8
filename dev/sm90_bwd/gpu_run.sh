#!/usr/bin/env bash
# dev/sm90_bwd/gpu_run.sh - one GPU-machine call for the Hopper backward: build for sm_90a, the
# backward's C tests on the sm90 path (default forward, and the sm90 forward), compute-sanitizer
# on small shapes, CLI timings of the sm80 and sm90 backwards side by side, and the package bench
# (backward against cuDNN). Into $OUT (or ./gpu-logs): 0-summary.txt, the bench reports and
# logs.tar.gz (every log).
#   [PREBUILT=dir] [PREBUILT_VAR=dir] dev/sm90_bwd/gpu_run.sh [tests] [sanitize] [cli] [ab] [abvar] [small] [ncu] [all] [det] [detvar]
#     [seed] [pybench] [pybench-quick] [train-quick] [train] [pytest] [allsm80] [sanitize27] [overhead] [sanitizevar]
#     [dims] [bwdtrace] [ncuvar] [energy], and the feature checks of dev/sm90_bwd/gpu_feature_steps.sh (sourced here):
#     [varlen] [sm90varlen] [softcap] [bwdsoftcap] [bwdwidesoftcap] [bwdvarlen] [widths] [bwdwide]
#     [sanitize27] [vbench] [losscheck]
# Each step is a function step_<name> (a '-' in the name read as '_'); the loop at the end runs
# them in the order given.
# PREBUILT / PREBUILT_VAR: folders of binaries built on the workstation (dev/tools/prebuild.sh
# makes build-carry/ and build-carry-TAG/), named in the run's carry: no build on the GPU machine.
# abvar: VAR_FLAGS="-DSM90_..." builds build-var/ with those dev knobs; CLI timings new / var.
#   VAR_TESTS="gpu_bwd gpu_dims_hopper_bwd gpu_softcap_hopper_bwd": the var build's test filters
#   run (sm90 forced) before the timings (default gpu_bwd, the narrow rows only).
# ncuvar: ncu (locked clocks, caches flushed) of the backward's pre kernel of new and var (VAR_FLAGS /
#   PREBUILT_VAR), the first launch a call: duration, DRAM bytes, L2 write requests / sectors from the
#   SMs, L2 throughput; NCUVAR_SHAPES (one a line) replaces the list, NCUVAR_ARGS adds ncu options
#   (e.g. --clock-control none). docs/kernels/sm90_bwd_next.md section 8.
# detvar: the deterministic mode with VAR_FLAGS (e.g. -DSM90_BWD_DET_DESCENDING=0): the var build's
#   deterministic tests and sanitizers first, then CLI A/B tree / var (~200 s with PREBUILT_VAR):
#   PREBUILT=build-carry PREBUILT_VAR=build-carry-TAG dev/sm90_bwd/gpu_run.sh detvar (both made by
#   PREBUILD_GZ=1 dev/tools/prebuild.sh TAG=-DSM90_BWD_...: two uncompressed folders
#   are ~95 MB, over the run's 64 MiB carry)
# bwdtrace: experiment 1 of docs/kernels/sm90_bwd_next.md (docs/kernels/sm90_bwd_trace.md), the
#   block-phase trace (SM90_BWD_TRACE) of the 64-row tile (PREBUILT_VAR, or built with -DSM90_BWD_TRACE=1 -DSM90_BWD_D128_BM80=0: the
#   library's 80-row tile would take the step's non-causal d128 shapes) and the 80-row tile
#   (PREBUILT_VAR80, or built with -DSM90_BWD_TRACE=1 -DSM90_BWD_D128_BM80=1), run by the dev
#   program dev/sm90_bwd/bwd_trace_run.c (compiled here against each dev library; only the
#   libraries are taken from the carried folders): $out/bwdtrace.txt.
#   The wide rows (M2 of docs/kernels/sm90_bwd_wide_next.md; either build traces them):
#   TRACE_TAGS="t64" (the builds, default "t64 t80"), TRACE_CHECKS / TRACE_SHAPES: ';'-separated
#   bwd_trace_run arguments replacing the step's checks / timed shapes; TRACE_ENVS: space-separated
#   VAR=VALUE, each timed shape traced once under each (e.g. "CUDADENT_SM90_BWD_PERSISTENT=0
#   CUDADENT_SM90_BWD_PERSISTENT=1": a persistent trace build's library grid, then its persistent
#   CTAs; docs/kernels/sm90_bwd_next.md section 10, session 32).
# The device's git shows the landed main, not this tree: set CUDADENT_GIT_COMMIT=<hash> for the
# package bench's reports.
# ab: the backward of build-base/ (a tree made with
#   rm -rf build-base && mkdir build-base && git archive REV | tar -x -C build-base
# and sent with the run's carry) against the working tree's, CLI timings alternating base / new.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-logs}
mkdir -p "$out"
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(tests sanitize cli pybench)
# What comes back from the GPU machine is at most 8 files: the summary (named to sort first), the
# bench reports (.md/.json/.png) and one archive of every log, written on exit.
summary="$out/0-summary.txt"
: > "$summary"
logs=$(mktemp -d)
trap 'tar -czf "$out/logs.tar.gz" -C "$logs" . 2>/dev/null' EXIT
note() { echo "$*" | tee -a "$summary"; }
note "env: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) $(git log -1 --format=%h 2>/dev/null)"
t0=$(date +%s)
# the library of a carried folder $1 into $2: libcudadent.so.0.gz (dev/tools/prebuild.sh with
# PREBUILD_GZ=1) unpacked, else libcudadent.so*
copy_lib() {
  if [ -f "$1/libcudadent.so.0.gz" ]; then
    gzip -dc "$1/libcudadent.so.0.gz" > "$2/libcudadent.so.0" && ln -sf libcudadent.so.0 "$2/libcudadent.so"
  else cp "$1"/libcudadent.so* "$2/"; fi
}
if [ -n "${PREBUILT:-}" ]; then
  # binaries built on the workstation (cmake -B build-gpu -DCUDADENT_GPU_ARCHS=90a), copied into
  # the carried folder $PREBUILT: no build on the GPU machine
  rm -rf build-gpu && mkdir -p build-gpu/tests && copy_lib "$PREBUILT" build-gpu && cp "$PREBUILT"/cudadent-bench build-gpu/ \
    && cp "$PREBUILT"/cudadent_tests build-gpu/tests/ && export LD_LIBRARY_PATH=$PWD/build-gpu \
    || { note "PREBUILT $PREBUILT incomplete"; exit 1; }
  note "prebuilt: $(ls "$PREBUILT" | tr '\n' ' ')"
elif ! { cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCUDADENT_GPU_ARCHS=90a \
       && cmake --build build-gpu -j 16; } > "$logs/build.log" 2>&1; then
  note "BUILD FAILED"; tail -40 "$logs/build.log"; exit 1
fi
note "build: $(( $(date +%s) - t0 )) s"
bench=build-gpu/cudadent-bench
# build-var/: the working tree with VAR_FLAGS (dev knobs), built here, or copied from $PREBUILT_VAR
# (built on the workstation with -DCUDADENT_DEV $VAR_FLAGS); always run on its own library
var_run="env LD_LIBRARY_PATH=$PWD/build-var"
var_build() {
  if [ -n "${PREBUILT_VAR:-}" ]; then
    rm -rf build-var && mkdir -p build-var/tests \
      && copy_lib "$PREBUILT_VAR" build-var && cp "$PREBUILT_VAR"/cudadent-bench build-var/ \
      && cp "$PREBUILT_VAR"/cudadent_tests build-var/tests/ || { note "PREBUILT_VAR incomplete"; return 1; }
  else
    { cmake -S . -B build-var -DCMAKE_BUILD_TYPE=Release -DCUDADENT_GPU_ARCHS=90a \
        "-DCMAKE_CUDA_FLAGS=-DCUDADENT_DEV ${VAR_FLAGS:?}" \
        && cmake --build build-var -j 16 --target cudadent-bench cudadent_tests; } > "$logs/build-var.log" 2>&1 \
      || { note "VAR BUILD FAILED"; tail -20 "$logs/build-var.log"; return 1; }
  fi
  note "var: ${VAR_FLAGS:-} ${PREBUILT_VAR:+(prebuilt $PREBUILT_VAR)}"
}
# the var build's backward tests on the sm90 path (a wrong dQ turn order hangs: the timeout ends
# it); timings follow only where they pass. VAR_TESTS (default gpu_bwd): the test filters run, each
# forced onto sm90, e.g. VAR_TESTS="gpu_bwd gpu_dims_hopper_bwd gpu_softcap_hopper_bwd"
var_tests() {
  local rc=0 r filter
  for filter in ${VAR_TESTS:-gpu_bwd}; do
    ( export CUDADENT_KERNEL_BWD=sm90; timeout 180 $var_run build-var/tests/cudadent_tests "$filter" > "$logs/t.log" 2>&1 )
    r=$?
    note "var tests (sm90 $filter): rc $r $(tail -1 "$logs/t.log")"
    grep -E '^\[ FAIL' -B6 "$logs/t.log" | head -40 | tee -a "$summary"
    { echo "==== var $filter"; cat "$logs/t.log"; } >> "$logs/var_tests.log"
    [ $r = 0 ] || rc=$r
  done
  return $rc
}
# compute-sanitizer of C test cases with the backward forced onto sm90: sanitize_bwd_cases DIR LOG
# SPEC... (SPEC tool:case; DIR's library and tests), a summary line each, the logs into $logs/LOG
sanitize_bwd_cases() {
  local dir=$1 log=$2 spec tool case
  shift 2
  for spec in "$@"; do
    tool=${spec%%:*} case=${spec#*:}
    CUDADENT_KERNEL_BWD=sm90 timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 \
      env LD_LIBRARY_PATH=$PWD/$dir $dir/tests/cudadent_tests "$case" > "$logs/s.log" 2>&1
    note "$tool sm90 $case: rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$logs/s.log" | tail -1) $(tail -1 "$logs/s.log")"
    { echo "==== $tool $case"; cat "$logs/s.log"; } >> "$logs/$log"
  done
}
# DEADLINE (seconds from the start, default 540): a step that would start later is skipped, so a
# 600-second call ends with its logs; the archive is rewritten after every step for the same reason
deadline=${DEADLINE:-540}
# ---- the steps
step_tests() {
  for run in "CUDADENT_KERNEL_BWD=sm90:gpu_bwd" "CUDADENT_KERNEL=sm90:gpu_bwd" "CUDADENT_KERNEL=sm90:gpu_fwd"; do
    envset=${run%%:*} filter=${run#*:}
    ( export "$envset"; timeout 600 build-gpu/tests/cudadent_tests $filter > "$logs/t.log" 2>&1 )
    note "tests ($envset $filter): $(tail -1 "$logs/t.log")"
    grep -E '^\[ FAIL' -B6 "$logs/t.log" | head -60 | tee -a "$summary"
    { echo "==== $envset $filter"; cat "$logs/t.log"; } >> "$logs/tests.log"
  done
}
step_sanitize() {
  for tool in memcheck racecheck synccheck; do
    for shape in "--head-dim 64 --seqlen-q 200 --seqlen-k 300 --heads 4 --heads-kv 2 --causal" \
                 "--head-dim 128 --seqlen-q 300 --seqlen-k 260 --heads 2 --heads-kv 1 --window 70,20 --dtype fp16"; do
      CUDADENT_KERNEL_BWD=sm90 timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 \
        $bench --batch 1 $shape --bwd --check --iters 1 > "$logs/s.log" 2>&1
      note "sanitizer $tool ($shape): rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$logs/s.log" | tail -1)"
      { echo "==== $tool $shape"; cat "$logs/s.log"; } >> "$logs/sanitize.log"
    done
  done
}
step_cli() {
  for shape in "--batch 8 --seqlen-q 2048 --heads 16 --head-dim 128" \
               "--batch 1 --seqlen-q 16384 --heads 16 --head-dim 128" \
               "--batch 2 --seqlen-q 8192 --heads 16 --head-dim 128 --causal" \
               "--batch 8 --seqlen-q 2048 --heads 32 --head-dim 64" \
               "--batch 2 --seqlen-q 8192 --heads 32 --head-dim 64 --causal" \
               "--batch 4 --seqlen-q 4096 --heads 32 --heads-kv 8 --head-dim 128 --causal"; do
    for path in sm80 sm90 sm80 sm90; do
      r=$(CUDADENT_KERNEL_BWD=$path timeout 120 $bench $shape --dtype bf16 --bwd --iters 20 2>&1 | tail -2 | tr '\n' ' ')
      note "cli $path $shape: $r"
    done
  done
}
step_ab() {
  { cmake -S build-base -B build-base/b -DCMAKE_BUILD_TYPE=Release -DCUDADENT_GPU_ARCHS=90a \
      && cmake --build build-base/b -j 16 --target cudadent-bench; } > "$logs/build-base.log" 2>&1 \
    || { note "BASE BUILD FAILED"; continue; }
  for shape in "--batch 32 --seqlen-q 512 --heads 16 --head-dim 128" \
               "--batch 32 --seqlen-q 512 --heads 16 --head-dim 128 --causal" \
               "--batch 8 --seqlen-q 2048 --heads 16 --head-dim 128" \
               "--batch 1 --seqlen-q 16384 --heads 16 --head-dim 128" \
               "--batch 2 --seqlen-q 8192 --heads 16 --head-dim 128 --causal" \
               "--batch 32 --seqlen-q 512 --heads 32 --head-dim 64" \
               "--batch 32 --seqlen-q 512 --heads 32 --head-dim 64 --causal" \
               "--batch 2 --seqlen-q 8192 --heads 32 --head-dim 64 --causal"; do
    for rep in 1 2; do
      for lab in base new; do
        b=$bench; [ $lab = base ] && b="env LD_LIBRARY_PATH=$PWD/build-base/b build-base/b/cudadent-bench"
        r=$(CUDADENT_KERNEL_BWD=sm90 timeout 120 $b $shape --dtype bf16 --bwd --iters 30 2>&1 | tail -1 | awk '{print $(NF-2), $(NF-1)}')
        note "ab $lab $shape: ms TFLOP/s $r"
      done
    done
  done
}
step_abvar() {
  # the working tree against itself built with VAR_FLAGS (dev knobs of config.cuh, e.g. -DSM90_EXACT_BLOCKS=8)
  # ABVAR_SHAPES (one shape a line) replaces the list
  var_build && var_tests || return
  shapes=()
  if [ -n "${ABVAR_SHAPES:-}" ]; then mapfile -t shapes <<< "$ABVAR_SHAPES"; else shapes=(
               "--batch 32 --seqlen-q 512 --heads 16 --head-dim 128" \
               "--batch 16 --seqlen-q 1024 --heads 16 --head-dim 128" \
               "--batch 8 --seqlen-q 2048 --heads 16 --head-dim 128" \
               "--batch 4 --seqlen-q 4096 --heads 16 --head-dim 128" \
               "--batch 4 --seqlen-q 4096 --heads 16 --head-dim 128 --causal" \
               "--batch 4 --seqlen-q 4096 --heads 32 --heads-kv 8 --head-dim 128 --causal" \
               "--batch 1 --seqlen-q 16384 --heads 16 --head-dim 128" \
               "--batch 2 --seqlen-q 8192 --heads 16 --head-dim 128 --causal" \
               "--batch 32 --seqlen-q 512 --heads 32 --head-dim 64" \
               "--batch 2 --seqlen-q 8192 --heads 32 --head-dim 64 --causal"); fi
  for shape in "${shapes[@]}"; do
    for rep in 1 2; do
      for lab in new var; do
        b=$bench; [ $lab = var ] && b="$var_run build-var/cudadent-bench"
        r=$(timeout 120 $b $shape --dtype bf16 --bwd --iters 30 2>&1 | tail -1 | awk '{print $(NF-2), $(NF-1)}')
        note "abvar $lab $shape: ms TFLOP/s $r"
      done
    done
  done
}
step_sanitizevar() {
  # compute-sanitizer memcheck and synccheck of the var build (VAR_FLAGS / PREBUILT_VAR) on small
  # dense calls of the narrow rows forced onto sm90: keys not a multiple of BLOCK_N, GQA, head
  # dims below the row width in a gapped layout (the epilogue's clipping; SANITIZEVAR_SHAPES,
  # one shape a line, replaces the list)
  var_build || return
  shapes=()
  if [ -n "${SANITIZEVAR_SHAPES:-}" ]; then mapfile -t shapes <<< "$SANITIZEVAR_SHAPES"; else shapes=(
               "--batch 2 --seqlen-q 200 --seqlen-k 300 --heads 4 --heads-kv 2 --head-dim 96 --layout gapped" \
               "--batch 2 --seqlen-q 300 --seqlen-k 200 --heads 4 --heads-kv 1 --head-dim 40 --causal --layout gapped --dtype fp16"); fi
  for tool in memcheck synccheck; do
    for shape in "${shapes[@]}"; do
      CUDADENT_KERNEL_BWD=sm90 timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 \
        $var_run build-var/cudadent-bench $shape --bwd --check --iters 1 > "$logs/s.log" 2>&1
      note "sanitizevar $tool ($shape): rc $? $(grep -E 'ERROR SUMMARY' "$logs/s.log" | tail -1) $(grep -cE '\bok$' "$logs/s.log") ok"
      { echo "==== $tool $shape"; cat "$logs/s.log"; } >> "$logs/sanitizevar.log"
    done
  done
}
step_small() {
  # the small shapes of docs/DESIGN.md, fp16, GPU time per call in a CUDA graph of 100 calls
  for shape in "--batch 1 --heads 1 --seqlen-q 32" "--batch 1 --heads 1 --seqlen-q 128" \
               "--batch 1 --heads 8 --seqlen-q 512" "--batch 2 --heads 8 --seqlen-q 128" \
               "--batch 8 --heads 8 --seqlen-q 128 --causal" "--batch 16 --heads 8 --seqlen-q 512 --causal"; do
    for path in sm80 sm90; do
      r=$(CUDADENT_KERNEL_BWD=$path timeout 60 $bench $shape --head-dim 64 --dtype fp16 --bwd --iters 50 --graph 100 2>&1 | tail -1 | awk '{print $(NF-2), $(NF-1), $NF}')
      note "small $path $shape: ms TFLOP/s graph-us $r"
    done
  done
}
step_ncu() {
  for shape in "--batch 32 --seqlen-q 512 --heads 16 --head-dim 128" \
               "--batch 1 --seqlen-q 16384 --heads 16 --head-dim 128"; do
    CUDADENT_KERNEL_BWD=sm90 timeout 200 ncu --metrics gpu__time_duration.sum \
      $bench $shape --dtype bf16 --bwd --iters 1 > "$logs/ncu.log" 2>&1
    note "ncu $shape:"; grep -E "^  [a-zA-Z_].*\(|gpu__time_duration" "$logs/ncu.log" | \
      cut -c1-90 | tail -12 | tee -a "$summary"
  done
}
step_ncuvar() {
  var_build || return
  local m=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_requests_srcunit_tex_op_write.sum
  m+=,lts__t_sectors_srcunit_tex_op_write.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed
  shapes=()
  if [ -n "${NCUVAR_SHAPES:-}" ]; then mapfile -t shapes <<< "$NCUVAR_SHAPES"; else shapes=(
               "--batch 4 --seqlen-q 4096 --heads 16 --head-dim 128 --causal" \
               "--batch 8 --seqlen-q 2048 --heads 10 --head-dim 192 --head-dim-v 128 --causal" \
               "--batch 32 --seqlen-q 512 --heads 21 --head-dim 96 --causal"); fi
  for shape in "${shapes[@]}"; do
    for lab in new var; do
      b=$bench; [ $lab = var ] && b="$var_run build-var/cudadent-bench"
      CUDADENT_KERNEL_BWD=sm90 timeout 200 ncu ${NCUVAR_ARGS:-} --kernel-name 'regex:bwd_pre|bwd_varlen_pre' \
        --launch-count 1 --metrics $m $b $shape --dtype bf16 --bwd --iters 1 > "$logs/ncu.log" 2>&1
      note "ncuvar $lab $shape: rc $? $(grep -E '^ +(gpu__|dram__|lts__)' "$logs/ncu.log" | awk '{print $1, $(NF-1), $NF}' | tr '\n' ';')"
      { echo "==== ncuvar $lab $shape"; cat "$logs/ncu.log"; } >> "$logs/ncuvar.log"
    done
  done
}
step_pybench() {
  flag=""; [ "$step" = pybench-quick ] && flag="--seqlens 1024,8192"
  CUDADENT_KERNEL_BWD=sm90 CUDADENT_LIBRARY=$PWD/build-gpu/libcudadent.so PYTHONPATH=$PWD/python \
    PYTHONUNBUFFERED=1 timeout 540 python3 -m cudadent.bench --suite fa3 --backends cudadent,cudnn \
    --rounds 3 --no-flex --time-limit ${PYBENCH_LIMIT:-400} $flag --out "$out" > "$logs/pybench.log" 2>&1
  note "pybench: rc $?"; grep -E "^\|" "$logs/pybench.log" | head -60 | tee -a "$summary"
}
step_pybench_quick() { step_pybench; }
step_dims() {
  # issue 27's widths against cuDNN and SDPA's flash backend (bench.py --suite dims; DIMS_EXTRA
  # adds arguments, e.g. --seqlens 2048,8192)
  CUDADENT_LIBRARY=$PWD/build-gpu/libcudadent.so PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 \
    timeout ${DIMS_LIMIT:-300} python3 -m cudadent.bench --suite dims --backends ${DIMS_BACKENDS:-cudadent,cudnn,flash} \
    --rounds 2 --no-flex --time-limit $(( ${DIMS_LIMIT:-300} - 40 )) ${DIMS_EXTRA:-} --out "$out" > "$logs/dims.log" 2>&1
  note "dims: rc $?"; grep -E "^\|" "$logs/dims.log" | head -80 | tee -a "$summary"
}
step_all() {
  # default dispatch (on cc 9.0 both Hopper kernels, the deterministic backward included), every test
  ( timeout ${ALL_LIMIT:-300} build-gpu/tests/cudadent_tests > "$logs/all.log" 2>&1 )
  note "tests (default, all): rc $? $(tail -1 "$logs/all.log")"
  grep -E '^\[ FAIL' -B6 "$logs/all.log" | head -60 | tee -a "$summary"
}
step_allsm80() {
  # every GPU test with both directions forced onto the portable kernels
  ( export CUDADENT_KERNEL=sm80; timeout ${ALL_LIMIT:-300} build-gpu/tests/cudadent_tests gpu_ > "$logs/allsm80.log" 2>&1 )
  note "tests (CUDADENT_KERNEL=sm80, gpu_*): rc $? $(tail -1 "$logs/allsm80.log")"
  grep -E '^\[ FAIL' -B8 "$logs/allsm80.log" | head -60 | tee -a "$summary"
}
step_overhead() {
  CUDADENT_LIBRARY=$PWD/build-gpu/libcudadent.so PYTHONPATH=$PWD/python timeout 200 \
    python3 dev/pkg_overhead.py --breakdown > "$logs/overhead.log" 2>&1
  note "pkg_overhead: rc $?"; tail -30 "$logs/overhead.log" | tee -a "$summary"
}
step_det() {
  # the deterministic mode's cost: the sm90 backward without and with --deterministic, and the
  # sm80 backward with it (what dispatch gave causal deterministic calls until session 17)
  for shape in "--batch 8 --seqlen-q 2048 --heads 16 --head-dim 128" \
               "--batch 2 --seqlen-q 8192 --heads 16 --head-dim 128 --causal" \
               "--batch 32 --seqlen-q 512 --heads 16 --head-dim 128" \
               "--batch 8 --seqlen-q 2048 --heads 32 --head-dim 64" \
               "--batch 1 --seqlen-q 16384 --heads 16 --head-dim 128" \
               "--batch 8 --seqlen-q 2048 --heads 16 --head-dim 128 --window 256,64" \
               "--batch 4 --seqlen-q 4096 --heads 32 --heads-kv 8 --head-dim 128 --causal"; do
    for rep in 1 2; do
      for run in sm90: sm90:--deterministic sm80:--deterministic; do
        path=${run%%:*} mode=${run#*:}
        r=$(CUDADENT_KERNEL_BWD=$path timeout 120 $bench $shape --dtype bf16 --bwd --iters 20 $mode 2>&1 | tail -1 | awk '{print $(NF-2), $(NF-1)}')
        note "det $path ${mode:-nondet} $shape: ms TFLOP/s $r"
      done
    done
  done
}
step_detvar() {
  # the deterministic mode with VAR_FLAGS (e.g. -DSM90_BWD_DET_DESCENDING=0; session 22: the dQ warp of
  # docs/kernels/sm90_bwd.md section 3) against the working tree (~200 s with PREBUILT and
  # PREBUILT_VAR): the var build's deterministic tests first (a wrong turn order or barrier
  # count hangs: timeouts), compute-sanitizer synccheck / racecheck of small deterministic causal
  # GQA calls (the test gpu_bwd_deterministic's first case, shorter), then CLI timings of the
  # deterministic backward alternating tree / var twice, and the tree without --deterministic
  # once (the non-deterministic reference); DETVAR_SHAPES (one shape a line) replaces the list
  var_build || return
  dv_ok=1
  for run in "sm90:gpu_bwd_deterministic:120" "sm90:gpu_bwd:240" "sm90:d96-det:60" "sm90:v120-det:60" \
             ":gpu_dims_bwd_deterministic:60"; do
    path=${run%%:*} rest=${run#*:}; filter=${rest%%:*} lim=${rest#*:}
    ( [ -n "$path" ] && export CUDADENT_KERNEL_BWD=$path
      timeout $lim $var_run build-var/tests/cudadent_tests "$filter" > "$logs/t.log" 2>&1 )
    rc=$?
    note "detvar var tests (${path:+$path }$filter): rc $rc $(tail -1 "$logs/t.log")"
    grep -E '^\[ FAIL' -B6 "$logs/t.log" | head -30 | tee -a "$summary"
    { echo "==== detvar $path $filter"; cat "$logs/t.log"; } >> "$logs/detvar_tests.log"
    [ $rc = 0 ] || dv_ok=0
  done
  [ $dv_ok = 1 ] || { note "detvar: var tests failed, no sanitizer or timings"; continue; }
  for spec in "synccheck:--head-dim 128" "synccheck:--head-dim 64" "racecheck:--head-dim 128"; do
    tool=${spec%%:*} dim=${spec#*:}
    CUDADENT_KERNEL_BWD=sm90 timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 \
      $var_run build-var/cudadent-bench --batch 1 --seqlen-q 300 --heads 4 --heads-kv 2 $dim --causal \
      --deterministic --bwd --check --iters 1 > "$logs/s.log" 2>&1
    note "detvar sanitizer $tool (var, $dim causal GQA 4/2 s300 det): rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$logs/s.log" | tail -1) $(grep -cE '\bok$' "$logs/s.log") ok"
    { echo "==== $tool $dim"; cat "$logs/s.log"; } >> "$logs/detvar_sanitize.log"
  done
  shapes=()
  if [ -n "${DETVAR_SHAPES:-}" ]; then mapfile -t shapes <<< "$DETVAR_SHAPES"; else shapes=(
               "--batch 4 --seqlen-q 4096 --heads 16 --head-dim 128 --causal" \
               "--batch 8 --seqlen-q 2048 --heads 16 --head-dim 128" \
               "--batch 4 --seqlen-q 4096 --heads 32 --heads-kv 8 --head-dim 128 --causal" \
               "--batch 2 --seqlen-q 8192 --heads 32 --head-dim 64 --causal"); fi
  for shape in "${shapes[@]}"; do
    for lab in base var base var nondet; do
      b=$bench; mode=--deterministic
      [ $lab = var ] && b="$var_run build-var/cudadent-bench"
      [ $lab = nondet ] && mode=""
      r=$(CUDADENT_KERNEL_BWD=sm90 timeout 60 $b $shape --dtype bf16 --bwd --iters 30 $mode 2>&1 | tail -1 | awk '{print $(NF-2), $(NF-1)}')
      note "detvar $lab ${mode:-nondet} $shape: ms TFLOP/s $r"
    done
  done
}
step_seed() {
  # a once-seen forward failure (gpu_fwd/47, session 15) with its seed, on both forwards, and
  # the error ratio's spread over 300 seeds of that shape
  shape="--batch 1 --seqlen-q 1 --seqlen-k 1000 --heads 4 --head-dim 128 --window 33,7 --layout heads-first --outliers"
  for path in sm80 sm90; do
    r=$(CUDADENT_KERNEL=$path timeout 60 $bench $shape --dtype bf16 --seed 1795579709289356038 --check --iters 1 2>&1 | tail -4 | tr '\n' ' ')
    note "seed $path: $r"
    r=$(CUDADENT_KERNEL=$path timeout 120 $bench $shape --dtype bf16 --check-seeds 300 2>&1 | tail -3 | tr '\n' ' ')
    note "seeds300 $path: $r"
  done
}
step_train_quick() {
  flag=""; [ "$step" = train-quick ] && flag="--quick"
  CUDADENT_LIBRARY=$PWD/build-gpu/libcudadent.so PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 \
    timeout ${TRAIN_LIMIT:-300} python3 -m cudadent.bench --train $flag --out "$out" > "$logs/train.log" 2>&1
  note "train $flag: rc $?"; grep -E "^\||tokens/s|loss" "$logs/train.log" | head -40 | tee -a "$summary"
}
step_train() { step_train_quick; }
step_energy() {
  # energy per call of cudadent's and cuDNN's attention, and a GEMM's time right after each
  # (dev/bench/energy_probe.py; docs/kernels/sm90_bwd_next.md section 9, item 2)
  CUDADENT_LIBRARY=$PWD/build-gpu/libcudadent.so PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 \
    timeout ${ENERGY_LIMIT:-200} python3 dev/bench/energy_probe.py --out "$out" ${ENERGY_ARGS:-} > "$logs/energy.log" 2>&1
  note "energy: rc $?"; grep -E "^\||GEMM after|STOPPED" "$logs/energy.log" | tee -a "$summary"
}
step_bwdtrace() {
  # experiment 1 of docs/kernels/sm90_bwd_next.md (docs/kernels/sm90_bwd_trace.md): per trace
  # build (t64: the 64-row d128 tile, t80: the 80-row one), the dev library (carried: its libcudadent.so*; else built here) and
  # the dev program dev/sm90_bwd/bwd_trace_run.c compiled against it ($dir/bwd_trace_run); a
  # traced --check at 1k (and memcheck of a traced call: the trace's stores stay in its
  # buffer), then d128 non-causal 1k / 2k / 4k / 16k (16k tokens, 16 heads; t64 also d64 2k, 32
  # heads): bwd_trace_run (10 timed calls, all traced; the last one's dump) and
  # dev/sm90_bwd/trace_phases.py on it. Summaries: $out/bwdtrace.txt; the scripts' JSON in the
  # logs. ~60-100 s with prebuilt libraries.
  tb_ok=1
  for spec in "t64:${PREBUILT_VAR:-}:-DSM90_BWD_TRACE=1 -DSM90_BWD_D128_BM80=0" "t80:${PREBUILT_VAR80:-}:-DSM90_BWD_TRACE=1 -DSM90_BWD_D128_BM80=1"; do
    tag=${spec%%:*} rest=${spec#*:}; pre=${rest%%:*} flags=${rest#*:}; dir=build-trace-$tag
    [[ " ${TRACE_TAGS:-t64 t80} " == *" $tag "* ]] || continue
    if [ -n "$pre" ]; then
      rm -rf $dir && mkdir -p $dir && copy_lib "$pre" $dir \
        || { note "bwdtrace: $pre incomplete"; tb_ok=0; continue; }
    else
      { cmake -S . -B $dir -DCMAKE_BUILD_TYPE=Release -DCUDADENT_GPU_ARCHS=90a "-DCMAKE_CUDA_FLAGS=-DCUDADENT_DEV $flags" \
          && cmake --build $dir -j 16 --target cudadent; } > "$logs/build-$tag.log" 2>&1 \
        || { note "bwdtrace: BUILD $tag FAILED"; tail -20 "$logs/build-$tag.log"; tb_ok=0; continue; }
    fi
    # the dev program: the CLI's problem harness and the CPU reference from source, the dev
    # library linked (its cudadent_dev_sm90_bwd_trace_set), found through the rpath
    nvcc -O2 -cudart shared -Iinclude -Isrc -Itools -Isrc/reference dev/sm90_bwd/bwd_trace_run.c \
      tools/problem.c tools/problem_check.c tools/problem_timing.c src/reference/reference.c \
      src/reference/convert.c src/reference/varlen.c -L$dir -lcudadent -Xlinker -rpath=$PWD/$dir \
      -lpthread -lm -o $dir/bwd_trace_run > "$logs/build-run-$tag.log" 2>&1 \
      || { note "bwdtrace: bwd_trace_run $tag FAILED"; tail -20 "$logs/build-run-$tag.log"; tb_ok=0; }
    note "bwdtrace $tag: ${pre:+prebuilt $pre }$flags"
  done
  [ $tb_ok = 1 ] || return
  : > "$out/bwdtrace.txt"
  for tag in ${TRACE_TAGS:-t64 t80}; do
    # the dev library by LD_LIBRARY_PATH: a PREBUILT run exports build-gpu's, which would win
    # over the program's rpath (DT_RUNPATH) and lacks the trace entry point
    tb="env CUDADENT_KERNEL_BWD=sm90 LD_LIBRARY_PATH=$PWD/build-trace-$tag build-trace-$tag/bwd_trace_run"
    # the trace build packs P with dS after the dP^T wait in every tile: its results, checked
    # (traced) on the tile of each build, a masked d64 call and a deterministic GQA window call
    checks=("--seqlen-q 1024 --heads 2 --head-dim 128" "--seqlen-q 1000 --seqlen-k 700 --heads 2 --head-dim 64 --causal"
            "--seqlen-q 600 --heads 4 --heads-kv 2 --head-dim 128 --window 100,20 --deterministic --dtype fp16")
    [ -n "${TRACE_CHECKS:-}" ] && IFS=';' read -ra checks <<< "$TRACE_CHECKS"
    for chk in "${checks[@]}"; do
      timeout 120 $tb --batch 1 $chk --check --iters 2 --seed 7 --trace /tmp/bwdtrace-chk.bin > "$logs/c.log" 2>&1
      note "bwdtrace $tag check (traced, $chk): rc $? $(grep -E '^trace:| bwd ' "$logs/c.log" | tr '\n' ' ')$(grep -cE '\bok$' "$logs/c.log") ok $(grep -c FAIL "$logs/c.log") FAIL"
      { echo "==== $tag $chk"; cat "$logs/c.log"; } >> "$logs/bwdtrace_checks.log"
    done
    CUDADENT_KERNEL_BWD=sm90 LD_LIBRARY_PATH=$PWD/build-trace-$tag timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 \
      build-trace-$tag/bwd_trace_run --batch 1 --seqlen-q 1100 --seqlen-k 300 --heads 4 \
      --heads-kv 2 --head-dim 128 --iters 1 --trace /tmp/bwdtrace-chk.bin > "$logs/s.log" 2>&1
    note "bwdtrace $tag memcheck (traced): rc $? $(grep -E 'ERROR SUMMARY' "$logs/s.log" | tail -1)"
    python3 dev/sm90_bwd/trace_phases.py /tmp/bwdtrace-chk.bin --label "$tag memcheck run" >> "$logs/bwdtrace_chk.txt" 2>&1
    shapes=("--batch 16 --seqlen-q 1024 --heads 16 --head-dim 128" "--batch 8 --seqlen-q 2048 --heads 16 --head-dim 128" "--batch 4 --seqlen-q 4096 --heads 16 --head-dim 128"
            "--batch 1 --seqlen-q 16384 --heads 16 --head-dim 128")
    [ $tag = t64 ] && shapes+=("--batch 8 --seqlen-q 2048 --heads 32 --head-dim 64")
    [ -n "${TRACE_SHAPES:-}" ] && IFS=';' read -ra shapes <<< "$TRACE_SHAPES"
    for shape in "${shapes[@]}"; do
     for tenv in ${TRACE_ENVS:-_}; do
      [ "$tenv" = _ ] && tenv=
      label="$tag $(echo "$shape" | awk '{print "d" $8 " " $4 " b" $2}')${tenv:+ $tenv}"
      [ -n "${TRACE_SHAPES:-}" ] && label="$tag $(echo $shape | sed 's/--//g')${tenv:+ $tenv}"
      timeout 120 env $tenv $tb $shape --dtype bf16 --iters 10 --seed 7 --trace /tmp/bwdtrace.bin > "$logs/r.log" 2>&1
      rc=$?
      { echo "==== $label"; cat "$logs/r.log"; } >> "$logs/bwdtrace_runs.log"
      r=$(grep -E ' bwd ' "$logs/r.log" | tail -1)
      note "bwdtrace $label: rc $rc $r ($(grep -E '^trace:' "$logs/r.log" | cut -d, -f3 | sed 's/^ //'))"
      [ $rc = 0 ] || tail -3 "$logs/r.log" | tee -a "$summary"
      timeout 120 python3 dev/sm90_bwd/trace_phases.py /tmp/bwdtrace.bin --label "$label (run: $r)" \
        --json "$logs/bwdtrace-${label// /_}.json" >> "$out/bwdtrace.txt" 2>&1
      note "bwdtrace $label: script rc $?"
      echo >> "$out/bwdtrace.txt"
      rm -f /tmp/bwdtrace.bin
     done
    done
  done
  grep -E "^====|^block|^    block|^A |^B |^C |^E |^H |^J |^sum|^producer|^CTA: [0-9]|^tail|^SMs:" "$out/bwdtrace.txt" | cut -c1-220 | tee -a "$summary"
}
step_pytest() {
  CUDADENT_LIBRARY=$PWD/build-gpu/libcudadent.so PYTHONPATH=$PWD/python CUDADENT_TEST_STRICT=1 \
    timeout ${PYTEST_LIMIT:-240} python3 -m pytest -q -x tests/python > "$logs/pytest.log" 2>&1
  note "pytest: rc $? $(tail -1 "$logs/pytest.log")"; grep -E "FAILED|Error" "$logs/pytest.log" | head -20 | tee -a "$summary"
}
. dev/sm90_bwd/gpu_feature_steps.sh

for step in "${steps[@]}"; do
  if [ $(( $(date +%s) - t0 )) -ge "$deadline" ]; then note "$step: skipped (past DEADLINE $deadline s)"; continue; fi
  note "---- $step at $(( $(date +%s) - t0 )) s"
  fn=step_${step//-/_}
  if declare -F "$fn" > /dev/null; then "$fn"; else note "unknown step $step"; fi
  tar -czf "$out/logs.tmp.tgz" -C "$logs" . 2>/dev/null && mv "$out/logs.tmp.tgz" "$out/logs.tar.gz"
done
echo "==== summary"; cat "$summary"
