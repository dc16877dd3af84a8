#!/usr/bin/env bash
# session 30 call E: the final library (both gates on): every C test under the default dispatch, then the width tests forced onto sm80
set -u
O=$OUT; mkdir -p $O
. dev/tools/unpack_carry.sh
unpack_carry build-carry build-gpu
export LD_LIBRARY_PATH=$PWD/build-gpu
start=$(date +%s)
timeout 140 build-gpu/cudadent_tests > $O/all.log 2>&1; echo "default all: rc $? $(tail -1 $O/all.log) at $(( $(date +%s) - start )) s" >> $O/sum.txt
for f in gpu_dims_fwd gpu_dims_bwd gpu_varlen_fwd gpu_varlen_bwd gpu_softcap; do
  CUDADENT_KERNEL=sm80 timeout 30 build-gpu/cudadent_tests $f > $O/sm80-$f.log 2>&1
  echo "sm80 $f: rc $? $(tail -1 $O/sm80-$f.log) at $(( $(date +%s) - start )) s" >> $O/sum.txt
done
grep -h -B3 -A8 '^\[ FAIL' $O/*.log | head -80 >> $O/sum.txt
cd $O && tar czf logs.tgz *.log && rm -f *.log
