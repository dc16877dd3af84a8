# dev/sm90_bwd/gpu_feature_steps.sh - the feature checks of dev/sm90_bwd/gpu_run.sh, sourced by it
# (not run alone: it uses gpu_run.sh's set-up, $out, $logs, $bench, note, sanitize_bwd_cases):
# each step_<name> checks one feature that was built behind a gate of src/dispatch.h (all 1 now)
# with the C tests forced and default, compute-sanitizer on its cases and CLI timings. Run as
#   [PREBUILT=dir] dev/sm90_bwd/gpu_run.sh varlen | sm90varlen | softcap | bwdsoftcap |
#     bwdwidesoftcap | bwdvarlen | widths | bwdwide | sanitize27 | vbench | losscheck
# A step's build folder as build-gpu/: the gates those steps once built with (the softcap, varlen
# and wide rows' of src/dispatch.h) are all 1 since session 22, so build-gpu/ (or PREBUILT) is that
# build; a run of a library with a gate at 0 passes PREBUILT built with it (dev/tools/prebuild.sh
# PREBUILD_FLAGS=-D...=1).
gpu_build_as() { rm -rf "$1" && ln -s build-gpu "$1"; }
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

step_varlen() {
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
  done
}
step_sm90varlen() {
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
  done
}
step_softcap() {
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
  done
}
step_bwdsoftcap() {
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
    "--batch 4 --heads 16 --seqlen 4096 --head-dim 128 --causal"
}
step_bwdwidesoftcap() {
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
    "--batch 2 --heads 16 --seqlen 4096 --head-dim 256 --causal"
}
step_bwdvarlen() {
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
  done
}
step_widths() {
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
  done
}
step_bwdwide() {
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
  done
}
step_vbench() {
  # issue 28's packed-document suite against FlexAttention and the dense causal shape
  CUDADENT_LIBRARY=$PWD/build-gpu/libcudadent.so PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 \
    timeout ${VBENCH_LIMIT:-240} python3 -m cudadent.bench --suite varlen --backends cudadent,flex \
    --rounds 3 --time-limit $(( ${VBENCH_LIMIT:-240} - 40 )) --out "$out" > "$logs/vbench.log" 2>&1
  note "vbench: rc $?"; grep -E "^\||goal|>=" "$logs/vbench.log" | head -30 | tee -a "$summary"
}
step_losscheck() {
  # the training bench's loss check alone (3 data seeds x 3 attentions x 100 steps)
  CUDADENT_LIBRARY=$PWD/build-gpu/libcudadent.so PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 \
    timeout ${LOSS_LIMIT:-150} python3 -m cudadent.bench --train --train-configs none --out "$out" > "$logs/loss.log" 2>&1
  note "losscheck: rc $?"; grep -E "loss check|rms|bound|^\|" "$logs/loss.log" | head -20 | tee -a "$summary"
}
step_sanitize27() {
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
  done
}
