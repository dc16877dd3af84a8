#!/usr/bin/env bash
# dev/sm90_bwd/cluster_run.sh - one GPU call for option O2 at 192/128 (docs/kernels/sm90_bwd_cluster_ds.md
# section 8; the dev knob SM90_BWD_CLUSTER of config.cuh, its values in bwd_cluster.cuh): for each
# TAG, the build-carry-TAG library (dev/tools/prebuild.sh TAG=-DSM90_BWD_CLUSTER=V) is first checked
# on seven small 192/128 calls forced onto sm90 (odd key-block counts, causal, GQA / MQA, sq != sk, a
# window, head_dim 160, fp16; each under a 40 s timeout, so that a protocol hang costs little; the
# first failure stops the TAG), then timed against build-carry (the library) with
# dev/sm90_bwd/gpu_run.sh abvar on the 192/128 shapes, into $OUT/TAG. CHECK=0 skips the checks
# (the measurement value 2, whose dQ is wrong by design).
#   JOBS=2 PREBUILD_GZ=1 dev/tools/prebuild.sh cl4=-DSM90_BWD_CLUSTER=4 cl5=-DSM90_BWD_CLUSTER=5 ...
#   dev/sm90_bwd/cluster_run.sh cl4 cl5 ...   (carry build-carry and each build-carry-TAG, ~11 MB each;
#   ~60 s a TAG)
set -u
cd "$(dirname "$0")/../.."
base=${OUT:-gpu-logs}
checks='--batch 1 --seqlen-q 256 --seqlen-k 256 --heads 2 --head-dim 192 --head-dim-v 128
--batch 2 --seqlen-q 300 --seqlen-k 300 --heads 4 --head-dim 192 --head-dim-v 128
--batch 2 --seqlen-q 300 --seqlen-k 300 --heads 4 --head-dim 192 --head-dim-v 128 --causal
--batch 1 --seqlen-q 200 --seqlen-k 520 --heads 4 --heads-kv 2 --head-dim 192 --head-dim-v 128 --causal --layout gapped
--batch 1 --seqlen-q 520 --seqlen-k 256 --heads 2 --head-dim 192 --head-dim-v 128 --window 70,20 --dtype fp16
--batch 1 --seqlen-q 1024 --seqlen-k 1024 --heads 2 --head-dim 160 --head-dim-v 128 --causal
--batch 1 --seqlen-q 1100 --seqlen-k 700 --heads 8 --heads-kv 1 --head-dim 192 --head-dim-v 128 --dtype fp16'
shapes='--batch 8 --seqlen-q 2048 --heads 10 --head-dim 192 --head-dim-v 128 --causal
--batch 8 --seqlen-q 2048 --heads 10 --head-dim 192 --head-dim-v 128
--batch 2 --seqlen-q 8192 --heads 10 --head-dim 192 --head-dim-v 128 --causal'
for tag in "$@"; do
  out=$base/$tag lib=/tmp/cluster_run_$tag
  mkdir -p "$out" "$lib"
  gzip -dc build-carry-$tag/libcudadent.so.0.gz > $lib/libcudadent.so.0 && ln -sf libcudadent.so.0 $lib/libcudadent.so \
    || { echo "cluster_run.sh: build-carry-$tag incomplete" | tee -a "$out/checks.txt"; continue; }
  ok=1
  if [ "${CHECK:-1}" = 1 ]; then
    while read -r shape; do
      CUDADENT_KERNEL_BWD=sm90 LD_LIBRARY_PATH=$lib timeout 40 build-carry-$tag/cudadent-bench $shape --bwd --check \
        --iters 2 > $lib/c.log 2>&1; rc=$?
      echo "check $tag rc $rc ($shape): $(grep -cE '\bok$' $lib/c.log) ok" | tee -a "$out/checks.txt"
      [ $rc = 0 ] || { ok=0; tail -20 $lib/c.log | tee -a "$out/checks.txt"; break; }
    done <<< "$checks"
  fi
  [ $ok = 1 ] || continue
  OUT=$out PREBUILT=build-carry PREBUILT_VAR=build-carry-$tag VAR_TESTS="${VAR_TESTS:-no_such_test}" \
    ABVAR_SHAPES="$shapes" timeout 150 dev/sm90_bwd/gpu_run.sh abvar | grep -E "^abvar|tests"
done
