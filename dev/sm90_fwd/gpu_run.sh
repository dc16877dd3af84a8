#!/usr/bin/env bash
# gpu_run.sh - what one call on the GPU machine runs for the sm90 forward experiments.
#   dev/sm90_fwd/gpu_run.sh STEP...
#   steps: build check checkorder bench ncu ncudram ncusrc cudnnprof sass sassB loops tests defaulttests sm80tests bwdtests sanitize small
#          trace accuracy seeds (SEED_SHAPE, NSEEDS, EXTRA_SEEDS) seedstats (SEEDSTAT_SHAPES, NSEEDS)
# More env: CHECK_VARIANTS, BENCH_VARIANTS (e.g. 2,1; the first is the ratio's), NCU_CONFIGS
#      (B,S,H,D,causal of the FA3 suite, space separated; ncu, ncusrc, cudnnprof), CUDNN_KREGEX
#      (cudnnprof: ncu's kernel-name filter for cuDNN's forward).
# Env: LIBA_FLAGS, LIBB_FLAGS, LIBC_FLAGS (extra nvcc flags of the first, second and third dev library, e.g.
#      -DSM90_SCHED_GROUP=8; bench times every library and cuDNN round robin in one process),
#      LIBB_SRC (the source tree lib B is built from, default src; e.g. build-base/src, an
#      older commit's src unpacked with git archive and sent with the run's carry), ITERS (default 30), ONLY (bench configs, e.g. d64c0,d128c1),
#      BENCH_EXTRA (more bench flags, e.g. --nolse), BENCH_LIBS (the libraries in the bench's order,
#      e.g. /tmp/libsm90B.so,/tmp/libsm90A.so: the first one measured has an edge,
#      docs/kernels/sm90_fwd.md section 7.2),
#      CMAKE_CUDA_EXTRA (nvcc flags
#      of the library build that the tests use; CMAKE_CUDA_EXTRA_B: a second build, build-sm90b, that
#      bwdtests also runs), TRACE_CONFIGS (e.g. "32,512,32,64,1;32,512,16,128,0":
#      build also builds libA and libB with -DSM90_TRACE, and trace prints their tile timelines).
#      Logs under $OUT.
set -u
export PYTHONUNBUFFERED=1
out=${OUT:-/tmp/sm90-logs}; mkdir -p "$out"
A=/tmp/libsm90A.so; B=/tmp/libsm90B.so; C=/tmp/libsm90C.so; S=dev/sm90_fwd/check_fwd.py
IT=${ITERS:-30}; LIBS=$A
NVB="nvcc -shared -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -O3 -DCUDADENT_DEV -Iinclude"
NV="$NVB -Isrc dev/sm90_fwd/sm90_dev.cu src/kernels/sm90/fwd.cu src/device_info.c"
for step in "$@"; do
  echo "=== $step ($(date +%T))"
  case $step in
    build)
      $NV ${LIBA_FLAGS:-} -o $A > "$out/nvccA.log" 2>&1 & p1=$!
      if [ -n "${LIBB_FLAGS:-}" ]; then $NVB -I${LIBB_SRC:-src} dev/sm90_fwd/sm90_dev.cu ${LIBB_SRC:-src}/kernels/sm90/fwd.cu ${LIBB_SRC:-src}/device_info.c $LIBB_FLAGS -o $B > "$out/nvccB.log" 2>&1 & p2=$!; fi
      if [ -n "${LIBC_FLAGS:-}" ]; then $NV $LIBC_FLAGS -o $C > "$out/nvccC.log" 2>&1 & p4=$!; fi
      if [ -n "${TRACE_CONFIGS:-}" ]; then
        $NV ${LIBA_FLAGS:-} -DSM90_TRACE -o /tmp/libsm90TA.so > "$out/nvccTA.log" 2>&1 & p5=$!
        [ -n "${LIBB_FLAGS:-}" ] && [ -z "${LIBB_SRC:-}" ] && { $NVB -I${LIBB_SRC:-src} dev/sm90_fwd/sm90_dev.cu ${LIBB_SRC:-src}/kernels/sm90/fwd.cu ${LIBB_SRC:-src}/device_info.c $LIBB_FLAGS -DSM90_TRACE -o /tmp/libsm90TB.so > "$out/nvccTB.log" 2>&1 & p6=$!; }
      fi
      { cmake -S . -B build-sm90 -DCUDADENT_GPU_ARCHS=90a ${CMAKE_CUDA_EXTRA:+"-DCMAKE_CUDA_FLAGS=-DCUDADENT_DEV $CMAKE_CUDA_EXTRA"} && cmake --build build-sm90 -j8; } > "$out/cmake.log" 2>&1 & p3=$!
      if [ -n "${CMAKE_CUDA_EXTRA_B:-}" ]; then
        { cmake -S . -B build-sm90b -DCUDADENT_GPU_ARCHS=90a "-DCMAKE_CUDA_FLAGS=-DCUDADENT_DEV $CMAKE_CUDA_EXTRA_B" && cmake --build build-sm90b -j8; } > "$out/cmakeB.log" 2>&1 & p7=$!
      fi
      wait $p1; echo "libA rc $?"
      [ -n "${LIBB_FLAGS:-}" ] && { wait $p2; echo "libB ($LIBB_FLAGS) rc $?"; LIBS=$LIBS,$B; }
      [ -n "${LIBC_FLAGS:-}" ] && { wait $p4; echo "libC ($LIBC_FLAGS) rc $?"; LIBS=$LIBS,$C; }
      if [ -n "${TRACE_CONFIGS:-}" ]; then wait $p5; echo "trace libA rc $?"; TLIBS=/tmp/libsm90TA.so
        [ -n "${LIBB_FLAGS:-}" ] && [ -z "${LIBB_SRC:-}" ] && { wait $p6; echo "trace libB rc $?"; TLIBS=$TLIBS,/tmp/libsm90TB.so; }; fi
      cmake_pid=$p3 ;;
    trace)
      timeout 120 python3 $S $TLIBS trace "$TRACE_CONFIGS" --variants 2 2>&1 | tee "$out/trace.log" ;;
    check)
      timeout 120 python3 $S $A check --variants ${CHECK_VARIANTS:-2} > "$out/checkA.log" 2>&1; echo "A: $(tail -1 "$out/checkA.log")"
      grep FAIL "$out/checkA.log" | cut -c1-170
      if [ -n "${LIBB_FLAGS:-}" ]; then
        timeout 90 python3 $S $B check --variants 2 > "$out/checkB.log" 2>&1; echo "B: $(tail -1 "$out/checkB.log")"
        grep FAIL "$out/checkB.log" | cut -c1-170
      fi ;;
    checkorder) # lib A's check with every case forced to the HEAD_GROUPS order (tile_order_choice.cuh)
      timeout 120 python3 $S $A check --variants 2 --order 4 > "$out/checkorder.log" 2>&1; echo "A order 4: $(tail -1 "$out/checkorder.log")"
      grep FAIL "$out/checkorder.log" | cut -c1-170 ;;
    bench)
      nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv -lms 500 > "$out/smi.csv" 2>&1 & smi=$!
      timeout 240 python3 $S ${BENCH_LIBS:-$LIBS} bench --variants ${BENCH_VARIANTS:-2} --iters $IT ${ONLY:+--only $ONLY} ${BENCH_EXTRA:-} 2>&1 | tee "$out/bench.log"
      kill $smi
      for f in 2 3; do tail -n +2 "$out/smi.csv" | cut -d, -f$f | tr -dc '0-9.\n' | sort -n |
        awk -v f=$f '{a[NR]=$1} END {print (f==2 ? "SM MHz" : "power W"), "during bench: min", a[1], "median", a[int((NR+1)/2)], "max", a[NR]}'; done ;;
    ncu)
      for cfg in ${NCU_CONFIGS:-1,16384,16,128,0}; do
        timeout 120 ncu --clock-control none -k regex:sm90_fwd --launch-skip 1 --launch-count 1 \
          --section SpeedOfLight --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,regex:sm__pipe_tensor.*cycles_active\.avg\.pct_of_peak_sustained_active,sm__inst_issued.avg.pct_of_peak_sustained_active' \
          python3 $S $A one $cfg --variants 2 > "$out/ncu-${cfg//,/_}.txt" 2>&1
        echo "ncu $cfg:"; grep -E "Duration|SM Frequency|Compute \(SM\)|stalled|pipe_tensor|inst_issued" "$out/ncu-${cfg//,/_}.txt" | awk '$NF+0 > 0.1 || /Duration|Freq|Compute|pipe|issued/' | sed 's/smsp__average_warps_issue_stalled_//' | head -24
      done ;;
    sass)
      o=$(find build-sm90 -path '*kernels/sm90/fwd.cu.o' | head -1); echo "object: $o"
      cuobjdump -sass "$o" > "$out/sm90_fwd.sass" 2>&1
      echo "HGMMA: $(grep -c HGMMA "$out/sm90_fwd.sass"), LDL/STL: $(grep -c 'LDL\|STL' "$out/sm90_fwd.sass")"
      grep -o 'HGMMA\.[0-9a-zx]*\.F32\.[A-Z0-9]*' "$out/sm90_fwd.sass" | sort | uniq -c
      grep -m3 'HGMMA.*tnspB' "$out/sm90_fwd.sass" | sed 's/ *\/\*[^*]*\*\/ *$//'
      python3 dev/sm90_fwd/sass_order.py "$out/sm90_fwd.sass" | cut -c1-400 ;;
    ncudram) # DRAM bytes, L2 hit rate and duration of one forward (with LSE) per NCU_CONFIGS config:
      # every library built (LIBS) and cuDNN; ncu flushes the caches before the profiled launch
      M=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second
      for cfg in ${NCU_CONFIGS:-4,4096,16,128,1}; do c=${cfg//,/_}
        for lib in ${LIBS//,/ }; do
          timeout 120 ncu --clock-control none -k regex:sm90_fwd --launch-skip 1 --launch-count 1 --metrics $M \
            python3 $S $lib one $cfg --variants 2 > "$out/ncudram-$(basename $lib .so)-$c.txt" 2>&1
          echo "ncudram $cfg $(basename $lib .so): $(grep -E 'dram__|lts__|gpu__time|per_second' "$out/ncudram-$(basename $lib .so)-$c.txt" | awk '{printf "%s %s %s; ", $1, $(NF-1), $NF}')"
        done
        timeout 150 ncu --clock-control none -k "regex:${CUDNN_KREGEX:-fprop|sdpa|fmha|flash}" --launch-skip 1 --launch-count 1 --metrics $M \
          python3 $S $A cudnn_one $cfg > "$out/ncudram-cudnn-$c.txt" 2>&1
        echo "ncudram $cfg cudnn: $(grep -E 'dram__|lts__|gpu__time|per_second' "$out/ncudram-cudnn-$c.txt" | awk '{printf "%s %s %s; ", $1, $(NF-1), $NF}')"
      done ;;
    ncusrc) # per-SASS-instruction warp stall samples of lib A (ncu source page), csv under $out
      for cfg in ${NCU_CONFIGS:-1,16384,16,128,0}; do
        timeout 240 ncu --section SourceCounters --section WarpStateStats -k regex:sm90_fwd --launch-skip 1 \
          --launch-count 1 -f -o /tmp/src-${cfg//,/_} python3 $S $A one $cfg --variants 2 > "$out/ncusrc.log" 2>&1
        echo "ncusrc $cfg rc $?"
        ncu --import /tmp/src-${cfg//,/_}.ncu-rep --page source --csv --print-source sass > "$out/src-${cfg//,/_}.csv" 2>&1
        echo "  $(wc -l < "$out/src-${cfg//,/_}.csv") lines"
      done ;;
    cudnnprof) # cuDNN's forward (with LSE, then without) next to lib A's on NCU_CONFIGS: launch shape,
      # time, instructions, tensor pipe (cudnnprof-*.txt), and executed instructions by opcode of each
      # kernel (the ncu source page through opcode_mix.py)
      M='smsp__inst_executed.sum,sm__inst_issued.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.max,regex:sm__pipe_tensor.*cycles_active\.avg\.pct_of_peak_sustained_active'
      for cfg in ${NCU_CONFIGS:-32,512,32,64,1}; do c=${cfg//,/_}
        timeout 150 ncu --clock-control none --section LaunchStats --section SpeedOfLight --metrics "$M" \
          python3 $S $A cudnn_one $cfg > "$out/cudnnprof-$c.txt" 2>&1
        for m in lse nolse; do
          timeout 120 ncu --clock-control none -k regex:sm90_fwd --launch-skip 1 --launch-count 1 --section LaunchStats \
            --section SpeedOfLight --metrics "$M" python3 $S $A one $cfg --variants 2 $([ $m = nolse ] && echo --nolse) > "$out/ours-$m-$c.txt" 2>&1
        done
        echo "cudnnprof $cfg:"; grep -hE "^  [a-zA-Z_].*\(|Duration|Grid Size|Block Size|Registers Per|Dynamic Shared|Cluster Size|inst_executed.sum|inst_issued|pipe_tensor.*gmma|cycles_elapsed" \
          "$out/cudnnprof-$c.txt" "$out/ours-lse-$c.txt" "$out/ours-nolse-$c.txt" | grep -v "elementwise\|distribution\|copy_\|fill" | cut -c1-150
        for sk in 0 2; do
          timeout 150 ncu --section SourceCounters -k "regex:${CUDNN_KREGEX:-fprop|sdpa|fmha|flash}" --launch-skip $sk --launch-count 1 -f \
            -o /tmp/cud-$sk python3 $S $A cudnn_one $cfg > /dev/null 2>&1
          ncu --import /tmp/cud-$sk.ncu-rep --page source --csv --print-source sass > "$out/src-cudnn$sk-$c.csv" 2>&1
        done
        for m in lse nolse; do
          timeout 150 ncu --section SourceCounters -k regex:sm90_fwd --launch-skip 1 --launch-count 1 -f -o /tmp/our-$m \
            python3 $S $A one $cfg --variants 2 $([ $m = nolse ] && echo --nolse) > /dev/null 2>&1
          ncu --import /tmp/our-$m.ncu-rep --page source --csv --print-source sass > "$out/src-ours-$m-$c.csv" 2>&1
        done
        python3 dev/sm90_fwd/opcode_mix.py "$out/src-cudnn0-$c.csv" "$out/src-cudnn2-$c.csv" "$out/src-ours-lse-$c.csv" "$out/src-ours-nolse-$c.csv" 2>&1 | tee "$out/mix-$c.txt"
      done ;;
    loops) # opcode counts of the main-loop steps of libs A and B (LSE rows d64 M192 and d128)
      for L in $A $B; do [ -f $L ] || continue; cuobjdump -sass $L > /tmp/loops.sass 2>&1
        echo "$L:"; python3 dev/sm90_fwd/sass_loops.py /tmp/loops.sass ${LOOP_KERNELS:-Li0ELb0ELi2E Li2ELb0ELi2E}; done ;;
    sassB) # the dev library B (e.g. an experiment flag): spills and HGMMA count per kernel
      cuobjdump -sass $B > "$out/libB.sass" 2>&1
      echo "libB HGMMA: $(grep -c HGMMA "$out/libB.sass"), LDL: $(grep -c LDL "$out/libB.sass"), STL: $(grep -c STL "$out/libB.sass")"
      python3 dev/sm90_fwd/sass_order.py "$out/libB.sass" | grep -A1 'Li2ELb0ELi2E\|Li0ELb0ELi2E\|Li3ELb0ELi2E' | cut -c1-300 ;;
    tests)
      wait ${cmake_pid:-} 2>/dev/null; tail -1 "$out/cmake.log"
      CUDADENT_KERNEL=sm90 timeout 120 stdbuf -oL build-sm90/tests/cudadent_tests gpu_fwd > "$out/tests_sm90.log" 2>&1
      tail -1 "$out/tests_sm90.log"; grep -B3 "FAIL \]" "$out/tests_sm90.log" | grep "  b[0-9]\|o    max_err" | cut -c1-150 ;;
    defaulttests)
      timeout 120 stdbuf -oL build-sm90/tests/cudadent_tests gpu_fwd > "$out/tests_default.log" 2>&1
      echo "default dispatch: $(tail -1 "$out/tests_default.log")"; grep -B3 "FAIL \]" "$out/tests_default.log" | grep "  b[0-9]\|o    max_err" | cut -c1-150 ;;
    bwdtests) # the (sm80) backward fed by the sm90 forward, in build-sm90 and (if built) build-sm90b
      wait ${cmake_pid:-} 2>/dev/null; [ -n "${p7:-}" ] && wait $p7
      for b in build-sm90 build-sm90b; do
        [ -x $b/tests/cudadent_tests ] || continue
        CUDADENT_KERNEL=sm90 timeout 200 stdbuf -oL $b/tests/cudadent_tests gpu_bwd > "$out/bwd-$b.log" 2>&1
        echo "$b gpu_bwd: $(tail -1 "$out/bwd-$b.log")"
      done ;;
    accuracy)
      timeout 120 python3 $S $LIBS accuracy --variants 2 2>&1 | tee "$out/accuracy.log" ;;
    seeds) # O error against the criterion over seeds 1..NSEEDS of SEED_SHAPE (cudadent-bench
      # shape flags), on the sm90 path of build-sm90 (and build-sm90b) and the sm80 path:
      # "seed build path o_err lowp_err ratio(err/lowp)", then the worst element and its row's LSE
      wait ${cmake_pid:-} 2>/dev/null; [ -n "${p7:-}" ] && wait $p7
      for seed in $(seq 1 ${NSEEDS:-20}) ${EXTRA_SEEDS:-}; do
        for bk in build-sm90:sm90 build-sm90b:sm90 build-sm90:sm80; do
          b=${bk%%:*}; k=${bk##*:}; [ -x $b/cudadent-bench ] || continue
          CUDADENT_KERNEL=$k timeout 60 $b/cudadent-bench $SEED_SHAPE --seed $seed --check --iters 1 > /tmp/seed.log 2>&1
          awk -v s=$seed -v b=$b -v k=$k '/^    o /{e=$3; l=$5; f=$NF} /worst:|row.s lse/{w=w $0}
            END {printf "%s %s %s %s %s %.3f %s\n", s, b, k, e, l, e/l, f; print w}' /tmp/seed.log
        done
      done 2>&1 | tee "$out/seeds.log" ;;
    seedstats) # per shape of SEEDSTAT_SHAPES (cudadent-bench shape flags, ';' between shapes):
      # the O error ratio's distribution over NSEEDS seeds (--check-seeds), on the sm90 path of
      # build-sm90 (and build-sm90b) and the sm80 path
      wait ${cmake_pid:-} 2>/dev/null; [ -n "${p7:-}" ] && wait $p7
      IFS=';' read -ra shapes <<< "$SEEDSTAT_SHAPES"
      for sh in "${shapes[@]}"; do
        for bk in build-sm90:sm90 build-sm90b:sm90 build-sm90:sm80; do
          b=${bk%%:*}; k=${bk##*:}; [ -x $b/cudadent-bench ] || continue
          echo "$b $k: $(CUDADENT_KERNEL=$k timeout 300 $b/cudadent-bench $sh --check-seeds ${NSEEDS:-1000} 2>&1 | tail -4 | tr '\n' ' ')"
        done
      done 2>&1 | tee "$out/seedstats.log" ;;
    sm80tests)
      CUDADENT_KERNEL=sm80 timeout 120 build-sm90/tests/cudadent_tests gpu_fwd > "$out/tests_sm80.log" 2>&1
      echo "sm80: $(tail -1 "$out/tests_sm80.log")"; grep -B3 "FAIL \]" "$out/tests_sm80.log" | grep "  b[0-9]\|o    max_err" | cut -c1-150 ;;
    sanitize)
      for tool in memcheck racecheck; do
        CUDADENT_KERNEL=sm90 timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 build-sm90/cudadent-bench \
          --batch 2 --seqlen-q 200 --seqlen-k 300 --heads 4 --heads-kv 2 --head-dim 64 --causal --iters 1 > "$out/san-$tool.log" 2>&1
        echo "$tool d64 causal rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/san-$tool.log" | tail -1)"
        CUDADENT_KERNEL=sm90 timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 build-sm90/cudadent-bench \
          --batch 1 --seqlen-q 300 --seqlen-k 257 --heads 8 --heads-kv 1 --head-dim 128 --window 33,7 --dtype fp16 --iters 1 > "$out/san2-$tool.log" 2>&1
        echo "$tool d128 window rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/san2-$tool.log" | tail -1)"
        CUDADENT_KERNEL=sm90 timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 build-sm90/cudadent-bench \
          --batch 2 --seqlen-q 600 --seqlen-k 500 --heads 16 --heads-kv 4 --head-dim 64 --causal --iters 1 > "$out/san3-$tool.log" 2>&1
        echo "$tool d64 causal, 160 tiles rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/san3-$tool.log" | tail -1)"
      done ;;
    small)
      for path in sm80 sm90 default; do
        for sh in "1 1 32 0" "1 1 128 0" "1 8 512 0" "2 8 128 0" "8 8 128 1" "16 8 512 1"; do
          set -- $sh; c=$([ $4 = 1 ] && echo --causal)
          r=$(CUDADENT_KERNEL=$([ $path = default ] || echo $path) timeout 30 build-sm90/cudadent-bench --batch $1 --heads $2 --seqlen-q $3 --head-dim 64 --dtype fp16 $c --iters 20 --graph 100 2>&1 | tail -2 | tr '\n' ' ')
          echo "$path B$1 H$2 S$3 causal$4: $r"
        done
      done 2>&1 | tee "$out/small.log" ;;
  esac
done
