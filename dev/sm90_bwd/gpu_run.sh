#!/usr/bin/env bash
# dev/sm90_bwd/gpu_run.sh - one GPU-machine call for the Hopper backward: build for sm_90a, the
# backward's C tests on the sm90 path (default forward, and the sm90 forward), compute-sanitizer
# on small shapes, CLI timings of the sm80 and sm90 backwards side by side, and the package bench
# (backward against cuDNN). Into $OUT (or ./gpu-logs): 0-summary.txt, the bench reports and
# logs.tar.gz (every log).
#   [PREBUILT=dir] [PREBUILT_VAR=dir] dev/sm90_bwd/gpu_run.sh [tests] [sanitize] [cli] [ab] [abvar] [small] [ncu] [all] [det] [detvar]
#     [seed] [pybench] [pybench-quick] [train-quick] [train] [pytest] [allsm80] [sanitize27] [overhead] [sanitizevar]
#     [varlen] [sm90varlen] [softcap] [bwdsoftcap] [bwdwidesoftcap] [bwdvarlen] [dims] [widths] [bwdwide]
#     [vbench] [losscheck] [bwdtrace]
# PREBUILT / PREBUILT_VAR: folders of binaries built on the workstation (dev/tools/prebuild.sh
# makes build-carry/ and build-carry-TAG/), named in the run's carry: no build on the GPU machine.
# abvar: VAR_FLAGS="-DSM90_..." builds build-var/ with those dev knobs; CLI timings new / var.
#   VAR_TESTS="gpu_bwd gpu_dims_hopper_bwd gpu_softcap_hopper_bwd": the var build's test filters
#   run (sm90 forced) before the timings (default gpu_bwd, the narrow rows only).
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
#   bwd_trace_run arguments replacing the step's checks / timed shapes.
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
# A step's build folder as build-gpu/: the gates those steps once built with (the softcap, varlen
# and wide rows' of src/dispatch.h) are all 1 since session 22, so build-gpu/ (or PREBUILT) is that
# build; a run of a library with a gate at 0 passes PREBUILT built with it (dev/tools/prebuild.sh
# PREBUILD_FLAGS=-D...=1).
gpu_build_as() { rm -rf "$1" && ln -s build-gpu "$1"; }
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
# CLI timings of the softcap backward (--bwd, bf16, --iters 50): softcap_bwd_cli DIR LOG SHAPE...,
# per shape sm80 and sm90 with softcap 30 and sm90 without, twice; the outputs into $logs/LOG
softcap_bwd_cli() {
  local dir=$1 log=$2 shape kc kern cap
  shift 2
  for shape in "$@"; do
    for kc in sm80:30 sm90:30 sm90:0 sm80:30 sm90:30 sm90:0; do
      kern=${kc%%:*} cap=${kc#*:}
      CUDADENT_KERNEL_BWD=$kern LD_LIBRARY_PATH=$PWD/$dir timeout 120 $dir/cudadent-bench $shape --softcap $cap \
        --bwd --dtype bf16 --iters 50 > "$logs/c.log" 2>&1
      note "cli $kern bwd softcap $cap ($shape): $(tail -1 "$logs/c.log")"
      cat "$logs/c.log" >> "$logs/$log"
    done
  done
}
# DEADLINE (seconds from the start, default 540): a step that would start later is skipped, so a
# 600-second call ends with its logs; the archive is rewritten after every step for the same reason
deadline=${DEADLINE:-540}
for step in "${steps[@]}"; do
  if [ $(( $(date +%s) - t0 )) -ge "$deadline" ]; then note "$step: skipped (past DEADLINE $deadline s)"; continue; fi
  note "---- $step at $(( $(date +%s) - t0 )) s"
  case $step in
    tests)
      for run in "CUDADENT_KERNEL_BWD=sm90:gpu_bwd" "CUDADENT_KERNEL=sm90:gpu_bwd" "CUDADENT_KERNEL=sm90:gpu_fwd"; do
        envset=${run%%:*} filter=${run#*:}
        ( export "$envset"; timeout 600 build-gpu/tests/cudadent_tests $filter > "$logs/t.log" 2>&1 )
        note "tests ($envset $filter): $(tail -1 "$logs/t.log")"
        grep -E '^\[ FAIL' -B6 "$logs/t.log" | head -60 | tee -a "$summary"
        { echo "==== $envset $filter"; cat "$logs/t.log"; } >> "$logs/tests.log"
      done ;;
    sanitize)
      for tool in memcheck racecheck synccheck; do
        for shape in "--head-dim 64 --seqlen-q 200 --seqlen-k 300 --heads 4 --heads-kv 2 --causal" \
                     "--head-dim 128 --seqlen-q 300 --seqlen-k 260 --heads 2 --heads-kv 1 --window 70,20 --dtype fp16"; do
          CUDADENT_KERNEL_BWD=sm90 timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 \
            $bench --batch 1 $shape --bwd --check --iters 1 > "$logs/s.log" 2>&1
          note "sanitizer $tool ($shape): rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$logs/s.log" | tail -1)"
          { echo "==== $tool $shape"; cat "$logs/s.log"; } >> "$logs/sanitize.log"
        done
      done ;;
    cli)
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
      done ;;
    ab)
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
      done ;;
    abvar)
      # the working tree against itself built with VAR_FLAGS (dev knobs of config.cuh, e.g. -DSM90_EXACT_BLOCKS=8)
      # ABVAR_SHAPES (one shape a line) replaces the list
      var_build && var_tests || continue
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
      done ;;
    sanitizevar)
      # compute-sanitizer memcheck and synccheck of the var build (VAR_FLAGS / PREBUILT_VAR) on small
      # dense calls of the narrow rows forced onto sm90: keys not a multiple of BLOCK_N, GQA, head
      # dims below the row width in a gapped layout (the epilogue's clipping; SANITIZEVAR_SHAPES,
      # one shape a line, replaces the list)
      var_build || continue
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
      done ;;
    small)
      # the small shapes of docs/DESIGN.md, fp16, GPU time per call in a CUDA graph of 100 calls
      for shape in "--batch 1 --heads 1 --seqlen-q 32" "--batch 1 --heads 1 --seqlen-q 128" \
                   "--batch 1 --heads 8 --seqlen-q 512" "--batch 2 --heads 8 --seqlen-q 128" \
                   "--batch 8 --heads 8 --seqlen-q 128 --causal" "--batch 16 --heads 8 --seqlen-q 512 --causal"; do
        for path in sm80 sm90; do
          r=$(CUDADENT_KERNEL_BWD=$path timeout 60 $bench $shape --head-dim 64 --dtype fp16 --bwd --iters 50 --graph 100 2>&1 | tail -1 | awk '{print $(NF-2), $(NF-1), $NF}')
          note "small $path $shape: ms TFLOP/s graph-us $r"
        done
      done ;;
    ncu)
      for shape in "--batch 32 --seqlen-q 512 --heads 16 --head-dim 128" \
                   "--batch 1 --seqlen-q 16384 --heads 16 --head-dim 128"; do
        CUDADENT_KERNEL_BWD=sm90 timeout 200 ncu --metrics gpu__time_duration.sum \
          $bench $shape --dtype bf16 --bwd --iters 1 > "$logs/ncu.log" 2>&1
        note "ncu $shape:"; grep -E "^  [a-zA-Z_].*\(|gpu__time_duration" "$logs/ncu.log" | \
          cut -c1-90 | tail -12 | tee -a "$summary"
      done ;;
    pybench|pybench-quick)
      flag=""; [ "$step" = pybench-quick ] && flag="--seqlens 1024,8192"
      CUDADENT_KERNEL_BWD=sm90 CUDADENT_LIBRARY=$PWD/build-gpu/libcudadent.so PYTHONPATH=$PWD/python \
        PYTHONUNBUFFERED=1 timeout 540 python3 -m cudadent.bench --suite fa3 --backends cudadent,cudnn \
        --rounds 3 --no-flex --time-limit ${PYBENCH_LIMIT:-400} $flag --out "$out" > "$logs/pybench.log" 2>&1
      note "pybench: rc $?"; grep -E "^\|" "$logs/pybench.log" | head -60 | tee -a "$summary" ;;
    varlen)
      # issue 28's varlen tests under the default dispatch and with the portable kernels forced,
      # then compute-sanitizer memcheck on three cases (02, 11, 12: see tests/test_gpu_varlen.c)
      for envset in "CUDADENT_KERNEL=" "CUDADENT_KERNEL=sm80"; do
        ( export "$envset"; timeout 200 build-gpu/tests/cudadent_tests gpu_varlen > "$logs/varlen.log" 2>&1 )
        note "tests ($envset gpu_varlen): rc $? $(tail -1 "$logs/varlen.log")"
        grep -E '^\[ FAIL' -B8 "$logs/varlen.log" | head -60 | tee -a "$summary"
        { echo "==== $envset"; cat "$logs/varlen.log"; } >> "$logs/varlen_all.log"
      done
      for case in ${VARLEN_SANITIZE:-gpu_varlen_fwd/02 gpu_varlen_fwd/11 gpu_varlen_fwd/12 gpu_varlen_bwd/1}; do
        timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 \
          build-gpu/tests/cudadent_tests "$case" > "$logs/s.log" 2>&1
        note "memcheck $case: rc $? $(grep -E 'ERROR SUMMARY' "$logs/s.log" | tail -1) $(tail -1 "$logs/s.log")"
        { echo "==== $case"; cat "$logs/s.log"; } >> "$logs/varlen_sanitize.log"
      done
      # the backward on ragged batches through the CLI (--varlen Q:K per sequence), gapped layouts
      for spec in "memcheck:--varlen 0:5,1:1,17:17,300:400,64:0,129:129 --heads 4 --heads-kv 2 --head-dim 64 --causal" \
                  "memcheck:--varlen 5:0,1:1,17:17,400:300,0:64,129:129 --heads 4 --heads-kv 1 --head-dim 128 --causal --layout gapped" \
                  "memcheck:--varlen 33:33,250:250,7:7 --heads 2 --heads-kv 2 --head-dim 192 --head-dim-v 128 --softcap 30 --causal" \
                  "memcheck:--varlen 0:5,1:1,17:17,300:400 --heads 4 --heads-kv 2 --head-dim 256 --window 33,7 --deterministic" \
                  "racecheck:--varlen 0:5,17:17,130:140 --heads 2 --heads-kv 1 --head-dim 64 --causal"; do
        tool=${spec%%:*} shape=${spec#*:}
        timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 \
          $bench $shape --bwd --check --iters 1 --seed 7 > "$logs/s.log" 2>&1
        note "$tool ($shape): rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$logs/s.log" | tail -1) $(grep -cE '\bok$' "$logs/s.log") ok"
        { echo "==== $tool $shape"; cat "$logs/s.log"; } >> "$logs/varlen_sanitize.log"
      done ;;
    sm90varlen)
      # issue 28's Hopper varlen forward (docs/kernels/sm90_fwd.md 2.6; needs a build with
      # src/dispatch.h CUDADENT_SM90_FWD_VARLEN 1, else every forced case skips): the varlen
      # tests forced onto sm90 and under the default dispatch, then compute-sanitizer (forced sm90)
      # on the sequence-end cases and the CLI
      for envset in "CUDADENT_KERNEL_FWD=sm90" "CUDADENT_KERNEL_FWD="; do
        ( export "$envset"; timeout 200 build-gpu/tests/cudadent_tests gpu_varlen_fwd > "$logs/t.log" 2>&1 )
        note "tests ($envset gpu_varlen_fwd): rc $? $(tail -1 "$logs/t.log") skipped $(grep -c 'skipped' "$logs/t.log")"
        grep -E '^\[ FAIL' -B8 "$logs/t.log" | head -60 | tee -a "$summary"
        { echo "==== $envset"; cat "$logs/t.log"; } >> "$logs/sm90varlen.log"
      done
      for spec in ${SM90VL_SANITIZE:-memcheck:gpu_varlen_fwd/02 memcheck:gpu_varlen_fwd/11 memcheck:gpu_varlen_fwd/14 memcheck:gpu_varlen_fwd/16 memcheck:gpu_varlen_fwd/18 racecheck:gpu_varlen_fwd/15 synccheck:gpu_varlen_fwd/17}; do
        tool=${spec%%:*} case=${spec#*:}
        CUDADENT_KERNEL_FWD=sm90 timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 \
          build-gpu/tests/cudadent_tests "$case" > "$logs/s.log" 2>&1
        note "$tool sm90 $case: rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$logs/s.log" | tail -1) $(tail -1 "$logs/s.log")"
        { echo "==== $tool $case"; cat "$logs/s.log"; } >> "$logs/sm90varlen_sanitize.log"
      done
      for spec in "memcheck:--varlen 1:1,127:127,129:129,0:5,255:255,64:0 --heads 4 --heads-kv 2 --head-dim 128 --causal --layout gapped" \
                  "memcheck:--varlen 1:1,127:300,129:129,193:100 --heads 4 --heads-kv 1 --head-dim 64 --window 33,7" \
                  "racecheck:--varlen 1:1,127:127,129:129 --heads 2 --heads-kv 1 --head-dim 128 --causal"; do
        tool=${spec%%:*} shape=${spec#*:}
        CUDADENT_KERNEL_FWD=sm90 timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 \
          $bench $shape --check --iters 1 --seed 7 > "$logs/s.log" 2>&1
        note "$tool sm90 fwd ($shape): rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$logs/s.log" | tail -1) $(grep -cE '\bok$' "$logs/s.log") ok"
        { echo "==== $tool $shape"; cat "$logs/s.log"; } >> "$logs/sm90varlen_sanitize.log"
      done ;;
    softcap)
      # issue 27's softcap on the Hopper forward (docs/kernels/sm90_fwd.md "Softcap"; build-sc/ is
      # build-gpu/, gpu_build_as): the softcap tests forced
      # onto sm90 (the d64 case skips: the row leaves it to sm80) and under the default dispatch,
      # the dims tests' softcap cases forced (those the row does not take skip), compute-sanitizer
      # memcheck (forced sm90) on two softcap cases, then CLI timings --softcap 30 sm90 against
      # sm80 (and sm90 without softcap) at d128 and d256, seqlen 4096
      gpu_build_as build-sc
      vrun="env LD_LIBRARY_PATH=$PWD/build-sc"
      for run in "CUDADENT_KERNEL_FWD=sm90:gpu_softcap_hopper_fwd" "CUDADENT_KERNEL_FWD=:gpu_softcap_hopper_fwd" \
                  "CUDADENT_KERNEL_FWD=sm90:gpu_dims_fwd" "CUDADENT_KERNEL_FWD=sm90:gpu_dims_bwd"; do
        envset=${run%%:*} filter=${run#*:}
        ( export "$envset"; timeout 300 $vrun build-sc/tests/cudadent_tests $filter > "$logs/t.log" 2>&1 )
        note "tests ($envset $filter): rc $? $(tail -1 "$logs/t.log") skipped $(grep -c 'skipped' "$logs/t.log")"
        grep -E '^\[ FAIL' -B8 "$logs/t.log" | head -60 | tee -a "$summary"
        { echo "==== $envset $filter"; cat "$logs/t.log"; } >> "$logs/softcap.log"
      done
      for spec in ${SC_SANITIZE:-memcheck:gpu_softcap_hopper_fwd/03 memcheck:gpu_softcap_hopper_fwd/05}; do
        tool=${spec%%:*} case=${spec#*:}
        CUDADENT_KERNEL_FWD=sm90 timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 \
          $vrun build-sc/tests/cudadent_tests "$case" > "$logs/s.log" 2>&1
        note "$tool sm90 $case: rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$logs/s.log" | tail -1) $(tail -1 "$logs/s.log")"
        { echo "==== $tool $case"; cat "$logs/s.log"; } >> "$logs/softcap_sanitize.log"
      done
      # timings: FA3-suite-like 16k tokens at seqlen 4096 (batch 4; heads 16 at d128, 8 at d256),
      # bf16, causal and not; sm90 / sm80 with softcap 30, and sm90 without (the cost of the tanh)
      for shape in "--batch 4 --heads 16 --seqlen 4096 --head-dim 128" "--batch 4 --heads 16 --seqlen 4096 --head-dim 128 --causal" \
                   "--batch 4 --heads 8 --seqlen 4096 --head-dim 256" "--batch 4 --heads 8 --seqlen 4096 --head-dim 256 --causal"; do
        for kc in sm80:30 sm90:30 sm90:0 sm80:30 sm90:30 sm90:0; do
          kern=${kc%%:*} cap=${kc#*:}
          CUDADENT_KERNEL_FWD=$kern timeout 120 $vrun build-sc/cudadent-bench $shape --softcap $cap --dtype bf16 --iters 50 > "$logs/c.log" 2>&1
          note "cli $kern fwd softcap $cap ($shape): $(tail -1 "$logs/c.log")"
          cat "$logs/c.log" >> "$logs/softcap_cli.log"
        done
      done ;;
    bwdsoftcap)
      # issue 27's softcap on the Hopper backward (docs/kernels/sm90_bwd_softcap.md; build-bsc/ is
      # build-gpu/, gpu_build_as): the backward softcap tests forced onto sm90 (-det skips:
      # the row leaves it to sm80; the d64 cases 08 / 09 run on the 64 / 64 row's softcap kernel
      # where the d64 gate is 1, and skip where it is 0: their lines are copied into the summary)
      # and under the default dispatch, the dims tests' backward forced (their softcap cases of the
      # d128 row run, and of the d64 row with the d64 gate), compute-sanitizer memcheck, racecheck
      # and synccheck (forced sm90) on a small d128 case and memcheck on a d64 one, then CLI timings
      # of the backward (--bwd) with softcap 30, sm90 against sm80 and sm90 without softcap, d64
      # (sm90 refuses softcap there where the d64 gate is 0: the line says so) and d128, seqlen 4096
      gpu_build_as build-bsc
      vrun="env LD_LIBRARY_PATH=$PWD/build-bsc"
      for run in "CUDADENT_KERNEL_BWD=sm90:gpu_softcap_hopper_bwd" "CUDADENT_KERNEL_BWD=:gpu_softcap_hopper_bwd" \
                  "CUDADENT_KERNEL_BWD=sm90:gpu_softcap_hopper_fwd" "CUDADENT_KERNEL_BWD=sm90:gpu_dims_bwd"; do
        envset=${run%%:*} filter=${run#*:}
        ( export "$envset"; timeout 300 $vrun build-bsc/tests/cudadent_tests $filter > "$logs/t.log" 2>&1 )
        note "tests ($envset $filter): rc $? $(tail -1 "$logs/t.log") skipped $(grep -c 'skipped' "$logs/t.log")"
        grep -E '^\[ FAIL' -B8 "$logs/t.log" | head -60 | tee -a "$summary"
        # the d64 softcap backward cases (the 64 / 64 row's kernel where the d64 gate is 1)
        grep -E '^\[ *(OK|SKIP|FAIL) *\] gpu_(softcap_hopper|dims)_bwd/[0-9]+-d(8|16|24|32|40|48|56|64)-cap' "$logs/t.log" \
          | sed 's/^/  d64: /' | tee -a "$summary"
        { echo "==== $envset $filter"; cat "$logs/t.log"; } >> "$logs/bwdsoftcap.log"
      done
      sanitize_bwd_cases build-bsc bwdsoftcap_sanitize.log ${BSC_SANITIZE:-memcheck:gpu_softcap_hopper_bwd/03 racecheck:gpu_softcap_hopper_bwd/03 synccheck:gpu_softcap_hopper_bwd/03 memcheck:gpu_softcap_hopper_bwd/08}
      # timings: 16k tokens at seqlen 4096 (batch 4; heads 32 at d64, 16 at d128), bf16, causal and
      # not; the backward of sm90 / sm80 with softcap 30, and sm90 without (the cost of the tanh)
      softcap_bwd_cli build-bsc bwdsoftcap_cli.log "--batch 4 --heads 32 --seqlen 4096 --head-dim 64" \
        "--batch 4 --heads 32 --seqlen 4096 --head-dim 64 --causal" "--batch 4 --heads 16 --seqlen 4096 --head-dim 128" \
        "--batch 4 --heads 16 --seqlen 4096 --head-dim 128 --causal" ;;
    bwdwidesoftcap)
      # softcap on the Hopper backward's wide rows (docs/kernels/sm90_bwd_softcap.md, "Wide
      # rows"; build-bwsc/ is build-gpu/, gpu_build_as). A probe first
      # (a small d256 softcap backward forced onto sm90, checked): a library without the gate
      # refuses it (rc 2) and the step stops there. Then gpu_softcap_hopper_bwd forced onto sm90
      # (cases 10-14 the wide rows; d64 and -det skip: the portable backward's) and under the
      # default dispatch, gpu_dims_bwd forced (its softcap cases over 128 run the wide kernels),
      # compute-sanitizer (BWSC_SANITIZE: memcheck on cases 10 (d256) and 13 (192 / 128), synccheck
      # on 10), and CLI timings of the backward (--bwd, --iters 50) at d256, seqlen 4096, batch 2,
      # 16 heads, bf16, causal and not: sm80 and sm90 with softcap 30, sm90 without, twice
      gpu_build_as build-bwsc
      vrun="env LD_LIBRARY_PATH=$PWD/build-bwsc"
      CUDADENT_KERNEL_BWD=sm90 timeout 120 $vrun build-bwsc/cudadent-bench --batch 1 --heads 4 --heads-kv 2 \
        --seqlen-q 150 --seqlen-k 130 --head-dim 256 --causal --softcap 30 --bwd --check --iters 1 > "$logs/c.log" 2>&1
      rc=$?
      note "probe sm90 d256 softcap bwd --check: rc $rc $(tail -1 "$logs/c.log")"
      cat "$logs/c.log" >> "$logs/bwdwidesoftcap_cli.log"
      [ $rc -eq 0 ] || { note "the library does not take wide softcap backwards on sm90 (a build without -DCUDADENT_SM90_BWD_WIDE_SOFTCAP=1?): step stopped"; continue; }
      for run in "CUDADENT_KERNEL_BWD=sm90:gpu_softcap_hopper_bwd" "CUDADENT_KERNEL_BWD=:gpu_softcap_hopper_bwd" \
                 "CUDADENT_KERNEL_BWD=sm90:gpu_dims_bwd"; do
        envset=${run%%:*} filter=${run#*:}
        ( export "$envset"; timeout 300 $vrun build-bwsc/tests/cudadent_tests $filter > "$logs/t.log" 2>&1 )
        note "tests ($envset $filter): rc $? $(tail -1 "$logs/t.log") skipped $(grep -c 'skipped' "$logs/t.log")"
        grep -E '^\[ FAIL' -B8 "$logs/t.log" | head -60 | tee -a "$summary"
        { echo "==== $envset $filter"; cat "$logs/t.log"; } >> "$logs/bwdwidesoftcap.log"
      done
      sanitize_bwd_cases build-bwsc bwdwidesoftcap_sanitize.log ${BWSC_SANITIZE:-memcheck:gpu_softcap_hopper_bwd/10 memcheck:gpu_softcap_hopper_bwd/13 synccheck:gpu_softcap_hopper_bwd/10}
      softcap_bwd_cli build-bwsc bwdwidesoftcap_cli.log "--batch 2 --heads 16 --seqlen 4096 --head-dim 256" \
        "--batch 2 --heads 16 --seqlen 4096 --head-dim 256 --causal" ;;
    bwdvarlen)
      # issue 28's Hopper varlen backward (docs/kernels/sm90_bwd_varlen.md; build-bvl/ is
      # build-gpu/, gpu_build_as): the varlen backward tests
      # forced onto sm90 (the deterministic, softcap and d > 128 cases skip) and under the default
      # dispatch, compute-sanitizer (forced sm90) on the tile-end, long, seqused and invalid-array
      # cases and a CLI shape, then CLI timings of ragged batches, sm90 against sm80
      gpu_build_as build-bvl
      vrun="env LD_LIBRARY_PATH=$PWD/build-bvl"
      for envset in "CUDADENT_KERNEL_BWD=sm90" "CUDADENT_KERNEL_BWD="; do
        ( export "$envset"; timeout 300 $vrun build-bvl/tests/cudadent_tests gpu_varlen_bwd > "$logs/t.log" 2>&1 )
        note "tests ($envset gpu_varlen_bwd): rc $? $(tail -1 "$logs/t.log") skipped $(grep -c 'skipped' "$logs/t.log")"
        grep -E '^\[ FAIL' -B8 "$logs/t.log" | head -60 | tee -a "$summary"
        { echo "==== $envset"; cat "$logs/t.log"; } >> "$logs/bwdvarlen.log"
      done
      sanitize_bwd_cases build-bvl bwdvarlen_sanitize.log ${BVL_SANITIZE:-memcheck:gpu_varlen_bwd/15 memcheck:gpu_varlen_bwd/16 memcheck:gpu_varlen_bwd/22 memcheck:gpu_varlen_bwd/11 racecheck:gpu_varlen_bwd/15 synccheck:gpu_varlen_bwd/17}
      shape="--varlen 1:1,127:127,129:129,0:5,255:255,64:0,700:700 --heads 4 --heads-kv 2 --head-dim 128 --causal --layout gapped --bwd"
      CUDADENT_KERNEL_BWD=sm90 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 \
        $vrun build-bvl/cudadent-bench $shape --check --iters 1 --seed 7 > "$logs/s.log" 2>&1
      note "memcheck sm90 bwd ($shape): rc $? $(grep -E 'ERROR SUMMARY' "$logs/s.log" | tail -1) $(grep -cE '\bok$' "$logs/s.log") ok"
      cat "$logs/s.log" >> "$logs/bwdvarlen_sanitize.log"
      # timings: issue 28's packed batch shape (18 documents, 16k tokens: bench.py's lengths are
      # drawn per run; these are fixed) and a short-document one, causal d128 16 heads and d64
      docs="4096:4096,2048:2048,1500:1500,1200:1200,1100:1100,900:900,800:800,700:700,650:650,600:600,500:500,450:450,400:400,300:300,250:250,190:190,100:100,84:84"
      for shape in "--varlen $docs --heads 16 --head-dim 128 --causal" "--varlen $docs --heads 32 --head-dim 64 --causal" \
                   "--varlen $docs --heads 16 --heads-kv 4 --head-dim 128" \
                   "--varlen $(printf '512:512,%.0s' $(seq 31))512:512 --heads 16 --head-dim 128 --causal"; do
        for kern in sm80 sm90 sm80 sm90; do
          CUDADENT_KERNEL_BWD=$kern timeout 120 $vrun build-bvl/cudadent-bench $shape --bwd --iters 50 > "$logs/c.log" 2>&1
          note "cli $kern bwd (${shape:0:60}...): $(tail -1 "$logs/c.log")"
          cat "$logs/c.log" >> "$logs/bwdvarlen_cli.log"
        done
      done ;;
    widths)
      # issue 27's Hopper rows (forward: 192/128, 256, every dim rounded up; backward: every dim
      # up to 128 rounded up to 64 / 128), sm90 forced: their C tests, the overread self-test,
      # the d64 / d128 backward cases (its epilogue changed), then compute-sanitizer on small
      # gapped shapes of each direction
      for run in "CUDADENT_KERNEL_BWD=sm90:gpu_dims_hopper_bwd" "CUDADENT_KERNEL=sm90:gpu_dims_gap_overread_fails" \
                 "CUDADENT_KERNEL_BWD=sm90:gpu_bwd" "CUDADENT_KERNEL=:gpu_dims_bwd"; do
        envset=${run%%:*} filter=${run#*:}
        ( export "$envset"; timeout 200 build-gpu/tests/cudadent_tests $filter > "$logs/t.log" 2>&1 )
        note "tests ($envset $filter): rc $? $(tail -1 "$logs/t.log")"
        grep -E '^\[ FAIL' -B8 "$logs/t.log" | head -40 | tee -a "$summary"
        { echo "==== $envset $filter"; cat "$logs/t.log"; } >> "$logs/widths.log"
      done
      for spec in "BWD:memcheck:--head-dim 96 --seqlen-q 200 --seqlen-k 300 --heads 4 --heads-kv 2 --causal --layout gapped --bwd --check" \
                  "BWD:memcheck:--head-dim 40 --head-dim-v 120 --seqlen-q 300 --seqlen-k 260 --heads 4 --heads-kv 2 --window 70,20 --dtype fp16 --layout gapped --bwd --check" \
                  "BWD:memcheck:--head-dim 8 --head-dim-v 128 --seqlen-q 130 --seqlen-k 200 --heads 2 --heads-kv 1 --layout gapped --deterministic --bwd --check" \
                  "BWD:synccheck:--head-dim 96 --seqlen-q 200 --seqlen-k 300 --heads 4 --heads-kv 2 --causal --layout gapped --bwd" \
                  "FWD:memcheck:--head-dim 256 --seqlen-q 200 --seqlen-k 300 --heads 4 --heads-kv 2 --causal --check" \
                  "FWD:memcheck:--head-dim 192 --head-dim-v 128 --seqlen-q 300 --seqlen-k 257 --heads 8 --heads-kv 1 --causal --check" \
                  "FWD:memcheck:--head-dim 8 --head-dim-v 256 --seqlen-q 130 --seqlen-k 130 --heads 2 --layout gapped --check" \
                  "FWD:racecheck:--head-dim 256 --seqlen-q 200 --seqlen-k 300 --heads 4 --heads-kv 2 --causal" \
                  "FWD:synccheck:--head-dim 192 --head-dim-v 128 --seqlen-q 300 --seqlen-k 257 --heads 8 --heads-kv 1 --causal"; do
        dir=${spec%%:*} rest=${spec#*:}; tool=${rest%%:*} shape=${rest#*:}
        env "CUDADENT_KERNEL_$dir=sm90" timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 \
          $bench --batch 2 $shape --iters 1 > "$logs/s.log" 2>&1
        note "$tool sm90 $dir ($shape): rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$logs/s.log" | tail -1) $(grep -cE '\bok$' "$logs/s.log") ok $(grep -c FAIL "$logs/s.log") FAIL"
        { echo "==== $tool $dir $shape"; cat "$logs/s.log"; } >> "$logs/widths_sanitize.log"
      done ;;
    bwdwide)
      # issue 27's wide Hopper backward rows (192 / 128, 256 and dims rounded up to them; build-wide/
      # is build-gpu/, gpu_build_as): their C tests forced to sm90 (the deterministic ones
      # included), the narrow rows again, then --check CLI lines and compute-sanitizer on small
      # gapped shapes of each wide row
      gpu_build_as build-wide
      wrun="env LD_LIBRARY_PATH=$PWD/build-wide"
      for run in "CUDADENT_KERNEL_BWD=sm90:gpu_dims_hopper_bwd" "CUDADENT_KERNEL_BWD=sm90:gpu_bwd" \
                 "CUDADENT_KERNEL=:gpu_dims_bwd" "CUDADENT_KERNEL=sm90:gpu_dims_gap_overread_fails"; do
        envset=${run%%:*} filter=${run#*:}
        ( export "$envset"; timeout 300 $wrun build-wide/tests/cudadent_tests $filter > "$logs/t.log" 2>&1 )
        note "wide tests ($envset $filter): rc $? $(tail -1 "$logs/t.log")"
        grep -E '^\[ FAIL' -B8 "$logs/t.log" | head -40 | tee -a "$summary"
        { echo "==== $envset $filter"; cat "$logs/t.log"; } >> "$logs/bwdwide.log"
      done
      for spec in "memcheck:--head-dim 256 --seqlen-q 200 --seqlen-k 300 --heads 4 --heads-kv 2 --causal --layout gapped --bwd --check" \
                  "memcheck:--head-dim 192 --head-dim-v 128 --seqlen-q 300 --seqlen-k 257 --heads 8 --heads-kv 2 --window 70,20 --dtype fp16 --layout gapped --bwd --check" \
                  "memcheck:--head-dim 200 --head-dim-v 128 --seqlen-q 300 --seqlen-k 130 --heads 4 --heads-kv 1 --layout gapped --deterministic --bwd --check" \
                  "memcheck:--head-dim 176 --head-dim-v 104 --seqlen-q 600 --seqlen-k 200 --heads 4 --heads-kv 2 --layout gapped --deterministic --bwd --check" \
                  "racecheck:--head-dim 256 --seqlen-q 200 --seqlen-k 300 --heads 4 --heads-kv 2 --causal --bwd" \
                  "racecheck:--head-dim 192 --head-dim-v 128 --seqlen-q 300 --seqlen-k 257 --heads 4 --heads-kv 2 --bwd" \
                  "synccheck:--head-dim 192 --head-dim-v 128 --seqlen-q 300 --seqlen-k 257 --heads 8 --heads-kv 1 --causal --bwd" \
                  "synccheck:--head-dim 256 --seqlen-q 300 --seqlen-k 257 --heads 4 --heads-kv 1 --bwd"; do
        tool=${spec%%:*} shape=${spec#*:}
        env CUDADENT_KERNEL_BWD=sm90 LD_LIBRARY_PATH=$PWD/build-wide timeout 120 compute-sanitizer --tool $tool \
          --error-exitcode 9 build-wide/cudadent-bench --batch 2 $shape --iters 1 > "$logs/s.log" 2>&1
        note "$tool sm90 wide bwd ($shape): rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$logs/s.log" | tail -1) $(grep -cE '\bok$' "$logs/s.log") ok $(grep -c FAIL "$logs/s.log") FAIL"
        { echo "==== $tool $shape"; cat "$logs/s.log"; } >> "$logs/bwdwide_sanitize.log"
      done
      # timings, sm90 (wide) against sm80 (today's path), the dims suite's shapes
      for shape in "--batch 8 --heads 8 --seqlen-q 2048 --seqlen-k 2048 --head-dim 256" \
                   "--batch 2 --heads 8 --seqlen-q 8192 --seqlen-k 8192 --head-dim 256 --causal" \
                   "--batch 8 --heads 10 --seqlen-q 2048 --seqlen-k 2048 --head-dim 192 --head-dim-v 128" \
                   "--batch 2 --heads 10 --seqlen-q 8192 --seqlen-k 8192 --head-dim 192 --head-dim-v 128 --causal"; do
        for k in sm90 sm80; do
          r=$(env CUDADENT_KERNEL_BWD=$k LD_LIBRARY_PATH=$PWD/build-wide timeout 120 build-wide/cudadent-bench $shape --bwd --iters 30 2>&1 | tail -1)
          note "wide bwd $k ($shape): $r"
        done
      done ;;
    vbench)
      # issue 28's packed-document suite against FlexAttention and the dense causal shape
      CUDADENT_LIBRARY=$PWD/build-gpu/libcudadent.so PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 \
        timeout ${VBENCH_LIMIT:-240} python3 -m cudadent.bench --suite varlen --backends cudadent,flex \
        --rounds 3 --time-limit $(( ${VBENCH_LIMIT:-240} - 40 )) --out "$out" > "$logs/vbench.log" 2>&1
      note "vbench: rc $?"; grep -E "^\||goal|>=" "$logs/vbench.log" | head -30 | tee -a "$summary" ;;
    losscheck)
      # the training bench's loss check alone (3 data seeds x 3 attentions x 100 steps)
      CUDADENT_LIBRARY=$PWD/build-gpu/libcudadent.so PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 \
        timeout ${LOSS_LIMIT:-150} python3 -m cudadent.bench --train --train-configs none --out "$out" > "$logs/loss.log" 2>&1
      note "losscheck: rc $?"; grep -E "loss check|rms|bound|^\|" "$logs/loss.log" | head -20 | tee -a "$summary" ;;
    dims)
      # issue 27's widths against cuDNN and SDPA's flash backend (bench.py --suite dims; DIMS_EXTRA
      # adds arguments, e.g. --seqlens 2048,8192)
      CUDADENT_LIBRARY=$PWD/build-gpu/libcudadent.so PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 \
        timeout ${DIMS_LIMIT:-300} python3 -m cudadent.bench --suite dims --backends ${DIMS_BACKENDS:-cudadent,cudnn,flash} \
        --rounds 2 --no-flex --time-limit $(( ${DIMS_LIMIT:-300} - 40 )) ${DIMS_EXTRA:-} --out "$out" > "$logs/dims.log" 2>&1
      note "dims: rc $?"; grep -E "^\|" "$logs/dims.log" | head -80 | tee -a "$summary" ;;
    all)
      # default dispatch (on cc 9.0 both Hopper kernels, the deterministic backward included), every test
      ( timeout ${ALL_LIMIT:-300} build-gpu/tests/cudadent_tests > "$logs/all.log" 2>&1 )
      note "tests (default, all): rc $? $(tail -1 "$logs/all.log")"
      grep -E '^\[ FAIL' -B6 "$logs/all.log" | head -60 | tee -a "$summary" ;;
    allsm80)
      # every GPU test with both directions forced onto the portable kernels
      ( export CUDADENT_KERNEL=sm80; timeout ${ALL_LIMIT:-300} build-gpu/tests/cudadent_tests gpu_ > "$logs/allsm80.log" 2>&1 )
      note "tests (CUDADENT_KERNEL=sm80, gpu_*): rc $? $(tail -1 "$logs/allsm80.log")"
      grep -E '^\[ FAIL' -B8 "$logs/allsm80.log" | head -60 | tee -a "$summary" ;;
    sanitize27)
      # memcheck of the portable kernels at the widths of issue 27 (gapped layout: data past
      # every head dim), forward and backward, and racecheck of one
      for shape in "--head-dim 192 --head-dim-v 128 --softcap 30 --seqlen-q 150 --seqlen-k 200 --heads 4 --heads-kv 2 --causal" \
                   "--head-dim 256 --seqlen-q 130 --seqlen-k 70 --heads 2 --heads-kv 1 --window 40,9 --dtype fp16" \
                   "--head-dim 80 --head-dim-v 136 --seqlen-q 65 --seqlen-k 190 --heads 3 --heads-kv 3 --softcap 5" \
                   "--head-dim 8 --seqlen-q 33 --seqlen-k 33 --heads 2 --heads-kv 1"; do
        for tool in memcheck racecheck; do
          [ $tool = racecheck ] && [[ "$shape" != *"--head-dim 192"* ]] && continue
          timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 \
            $bench --batch 1 $shape --layout gapped --bwd --check --iters 1 > "$logs/s.log" 2>&1
          note "sanitizer $tool ($shape): rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$logs/s.log" | tail -1) $(grep -cE '\bok$' "$logs/s.log") ok"
          { echo "==== $tool $shape"; cat "$logs/s.log"; } >> "$logs/sanitize27.log"
        done
      done ;;
    overhead)
      CUDADENT_LIBRARY=$PWD/build-gpu/libcudadent.so PYTHONPATH=$PWD/python timeout 200 \
        python3 dev/pkg_overhead.py --breakdown > "$logs/overhead.log" 2>&1
      note "pkg_overhead: rc $?"; tail -30 "$logs/overhead.log" | tee -a "$summary" ;;
    det)
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
      done ;;
    detvar)
      # the deterministic mode with VAR_FLAGS (e.g. -DSM90_BWD_DET_DESCENDING=0; session 22: the dQ warp of
      # docs/kernels/sm90_bwd.md section 3) against the working tree (~200 s with PREBUILT and
      # PREBUILT_VAR): the var build's deterministic tests first (a wrong turn order or barrier
      # count hangs: timeouts), compute-sanitizer synccheck / racecheck of small deterministic causal
      # GQA calls (the test gpu_bwd_deterministic's first case, shorter), then CLI timings of the
      # deterministic backward alternating tree / var twice, and the tree without --deterministic
      # once (the non-deterministic reference); DETVAR_SHAPES (one shape a line) replaces the list
      var_build || continue
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
      done ;;
    seed)
      # a once-seen forward failure (gpu_fwd/47, session 15) with its seed, on both forwards, and
      # the error ratio's spread over 300 seeds of that shape
      shape="--batch 1 --seqlen-q 1 --seqlen-k 1000 --heads 4 --head-dim 128 --window 33,7 --layout heads-first --outliers"
      for path in sm80 sm90; do
        r=$(CUDADENT_KERNEL=$path timeout 60 $bench $shape --dtype bf16 --seed 1795579709289356038 --check --iters 1 2>&1 | tail -4 | tr '\n' ' ')
        note "seed $path: $r"
        r=$(CUDADENT_KERNEL=$path timeout 120 $bench $shape --dtype bf16 --check-seeds 300 2>&1 | tail -3 | tr '\n' ' ')
        note "seeds300 $path: $r"
      done ;;
    train-quick|train)
      flag=""; [ "$step" = train-quick ] && flag="--quick"
      CUDADENT_LIBRARY=$PWD/build-gpu/libcudadent.so PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 \
        timeout ${TRAIN_LIMIT:-300} python3 -m cudadent.bench --train $flag --out "$out" > "$logs/train.log" 2>&1
      note "train $flag: rc $?"; grep -E "^\||tokens/s|loss" "$logs/train.log" | head -40 | tee -a "$summary" ;;
    bwdtrace)
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
      [ $tb_ok = 1 ] || continue
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
          label="$tag $(echo "$shape" | awk '{print "d" $8 " " $4 " b" $2}')"
          [ -n "${TRACE_SHAPES:-}" ] && label="$tag $(echo $shape | sed 's/--//g')"
          timeout 120 $tb $shape --dtype bf16 --iters 10 --seed 7 --trace /tmp/bwdtrace.bin > "$logs/r.log" 2>&1
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
      grep -E "^====|^block|^    block|^A |^B |^C |^E |^H |^J |^sum|^producer|^CTA: [0-9]|^tail" "$out/bwdtrace.txt" | cut -c1-160 | tee -a "$summary" ;;
    pytest)
      CUDADENT_LIBRARY=$PWD/build-gpu/libcudadent.so PYTHONPATH=$PWD/python CUDADENT_TEST_STRICT=1 \
        timeout ${PYTEST_LIMIT:-240} python3 -m pytest -q -x tests/python > "$logs/pytest.log" 2>&1
      note "pytest: rc $? $(tail -1 "$logs/pytest.log")"; grep -E "FAILED|Error" "$logs/pytest.log" | head -20 | tee -a "$summary" ;;
    *) note "unknown step $step" ;;
  esac
  tar -czf "$out/logs.tmp.tgz" -C "$logs" . 2>/dev/null && mv "$out/logs.tmp.tgz" "$out/logs.tar.gz"
done
echo "==== summary"; cat "$summary"
