#!/usr/bin/env bash
# dev/sm90_bwd/variant_steps.sh - the steps of a GPU call that checks, tests, sanitizes and times a
# variant build of one Hopper backward row against the library: sourced by the row scripts
# (wide3_run.sh, wide5_run.sh, d96_run.sh), which set, before `run_variant_steps "$@"`:
#   name          the script's name, for messages
#   var, base     the variant's folder and the base folder it is timed against (prebuild.sh's
#                 build-carry-TAG and build-carry; the library gzipped or not)
#   checks        array: cudadent-bench shapes run with --bwd --check forced onto sm90
#   test_filters  array: cudadent_tests filters run forced onto sm90
#   sanitize_specs  array: "tool:cudadent-bench arguments" run under compute-sanitizer, forced onto
#                 sm90 (racecheck's reported source lines are listed: the known report is the LSE2 /
#                 delta rows' loads, docs/kernels/sm90_bwd.md section 6)
#   time_shapes   one shape a line: gpu_run.sh abvar's timings (bf16 --iters 30, base / variant
#                 alternated twice; its gate: gpu_dims_hopper_bwd forced onto sm90)
# Steps (arguments; default all four): check, tests, sanitize, time (only where check found no
# FAIL). Into $OUT (or gpu-logs): 0-summary.txt, check.log, tests.log, sanitize.log and time/.

. dev/tools/unpack_carry.sh # unpack_carry (the row scripts run from the repository root)

run_variant_steps() {
  set -u
  local out=${OUT:-gpu-logs}
  mkdir -p "$out"
  local steps=("$@")
  [ ${#steps[@]} -gt 0 ] || steps=(check tests sanitize time)
  local summary="$out/0-summary.txt"
  : > "$summary"
  note() { echo "$*" | tee -a "$summary"; }
  note "env: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
  note "variant: $var, base: $base"
  # the variant's library unpacked beside its binaries
  local dir=build-variant
  unpack_carry "$var" $dir || { note "$var missing or incomplete (dev/tools/prebuild.sh)"; return 1; }
  local run="env CUDADENT_KERNEL_BWD=sm90 LD_LIBRARY_PATH=$PWD/$dir"
  local fails=0 step shape filter spec tool rc nfail
  for step in "${steps[@]}"; do
    note "---- $step"
    case $step in
      check)
        for shape in "${checks[@]}"; do
          timeout 60 $run $dir/cudadent-bench $shape --bwd --check --iters 2 > "$out/c.log" 2>&1
          rc=$?
          nfail=$(grep -c 'FAIL' "$out/c.log")
          [ $rc = 0 ] && [ "$nfail" = 0 ] || fails=$((fails + 1))
          note "check ($shape): rc $rc, $(grep -cE '\bok$' "$out/c.log") ok, $nfail FAIL"
          grep -E 'FAIL|error|Error' "$out/c.log" | head -6 | tee -a "$summary"
          { echo "==== $shape"; cat "$out/c.log"; } >> "$out/check.log"
        done
        rm -f "$out/c.log" ;;
      tests)
        for filter in "${test_filters[@]}"; do
          timeout 300 $run $dir/cudadent_tests $filter > "$out/t.log" 2>&1
          note "tests (sm90 $filter): rc $? $(tail -1 "$out/t.log")"
          grep -E '^\[ FAIL' -B8 "$out/t.log" | head -40 | tee -a "$summary"
          { echo "==== $filter"; cat "$out/t.log"; } >> "$out/tests.log"
        done
        rm -f "$out/t.log" ;;
      sanitize)
        for spec in "${sanitize_specs[@]}"; do
          tool=${spec%%:*} shape=${spec#*:}
          timeout 200 $run compute-sanitizer --tool $tool --error-exitcode 9 $dir/cudadent-bench $shape --iters 1 \
            > "$out/s.log" 2>&1
          note "$tool ($shape): rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/s.log" | tail -1) $(grep -cE '\bok$' "$out/s.log") ok"
          [ $tool = racecheck ] && note "  reported at: $(grep -oE '[A-Za-z0-9_]+\.cuh?:[0-9]+' "$out/s.log" | sort | uniq -c | tr '\n' ' ')"
          { echo "==== $tool $shape"; cat "$out/s.log"; } >> "$out/sanitize.log"
        done
        rm -f "$out/s.log" ;;
      time)
        if [ $fails != 0 ]; then note "time: skipped ($fails check shapes failed)"; continue; fi
        OUT=$out/time PREBUILT=$base PREBUILT_VAR=$var VAR_TESTS=gpu_dims_hopper_bwd \
          ABVAR_SHAPES="$time_shapes" timeout 330 dev/sm90_bwd/gpu_run.sh abvar
        grep -E 'abvar|var tests' "$out/time/0-summary.txt" | tee -a "$summary" > /dev/null ;;
      *) note "$name: unknown step $step"; return 2 ;;
    esac
  done
}
