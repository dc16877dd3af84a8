#!/usr/bin/env bash
# dev/sm90_bwd/ncu_compare.sh - ncu of one backward call (NCU_FORWARD=1: one forward with
# gradients recorded), cudadent beside SDPA's cuDNN, per shape (dev/sm90_bwd/ncu_one_call.py under
# `ncu --profile-from-start off`): every kernel of the call
# with its time, the tensor pipe's active cycles, shared-memory bank reads / writes and DRAM / L2
# throughput (percent of peak). On the GPU machine, with the library in build-gpu/ (gpu_run.sh's
# PREBUILT, or a build):
#   [NCU_METRICS=m1,m2] OUT=$OUT dev/sm90_bwd/ncu_compare.sh ["B H HKV S D DV CAUSAL" ...]
# into $OUT/ncu_compare.txt (one block per shape and backend) and $OUT/ncu_compare.csv.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-logs}
mkdir -p "$out"
lib=${CUDADENT_LIBRARY:-$PWD/build-gpu/libcudadent.so}
metrics="gpu__time_duration.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"
metrics+=",l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed"
metrics+=",l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed"
metrics+=",dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed"
[ -n "${NCU_METRICS:-}" ] && metrics+=",$NCU_METRICS" # more, comma-separated (the csv has them)
shapes=("$@")
[ ${#shapes[@]} -gt 0 ] || shapes=("4 16 16 4096 128 128 0" "4 16 16 4096 128 128 1")
for shape in "${shapes[@]}"; do
  read -r b h hkv s d dv causal <<< "$shape"
  for backend in cudadent cudnn; do
    args="--backend $backend --batch $b --heads $h --heads-kv $hkv --seqlen $s --head-dim $d --head-dim-v $dv"
    [ "$causal" = 1 ] && args+=" --causal"
    [ "${NCU_FORWARD:-0}" = 1 ] && args+=" --forward"
    echo "==== $backend $shape" | tee -a "$out/ncu_compare.txt"
    CUDADENT_LIBRARY=$lib PYTHONPATH=$PWD/python timeout 240 ncu --profile-from-start off --csv \
      --metrics "$metrics" python3 dev/sm90_bwd/ncu_one_call.py $args > "$out/ncu.raw" 2> "$out/ncu.err"
    echo "rc $? $(tail -2 "$out/ncu.err" | tr '\n' ' ')" >> "$out/ncu_compare.txt"
    grep '^"' "$out/ncu.raw" | sed "s/^/\"$backend\",\"$shape\",/" >> "$out/ncu_compare.csv"
    python3 - "$out/ncu.raw" <<'PY' | tee -a "$out/ncu_compare.txt"
import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
if not rows: sys.exit()
hdr = rows[0]; ki, ni, vi, ui = (hdr.index(c) for c in ("Kernel Name", "Metric Name", "Metric Value", "Metric Unit"))
idx = hdr.index("ID")
kern = {}
for r in rows[1:]:
    k = kern.setdefault(r[idx], {"name": r[ki][:70]})
    k[r[ni]] = (r[vi], r[ui])
short = {"gpu__time_duration.sum": "time", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": "tensor%",
         "l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed": "smem_rd%",
         "l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed": "smem_wr%",
         "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram%", "lts__throughput.avg.pct_of_peak_sustained_elapsed": "l2%"}
for i, k in kern.items():
    print(f"  {k['name']:70s} " + " ".join(f"{short[m]}={k[m][0]}{k[m][1] if m.startswith('gpu__') else ''}"
                                          for m in short if m in k))
PY
  done
done
