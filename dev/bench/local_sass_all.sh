#!/usr/bin/env bash
# local_sass_all.sh - every kernel's SASS on the build machine (no GPU needed), for refactors
# that must leave the machine code alone.
#   dev/bench/local_sass_all.sh LABEL [nvcc flags ...]
# Compiles, with the build's flags (CMakeLists.txt: Release -O3, --expt-relaxed-constexpr):
#   sm90_fwd   src/kernels/sm90/fwd.cu for sm_90a (the Hopper path)
#   sm90_fwdvl src/kernels/sm90/fwd_varlen.cu for sm_90a (its varlen kernels)
#   sm80_fwd80 / sm80_fwd90   src/kernels/sm80/fwd.cu for sm_80 and for sm_90 (what a Hopper
#                             build runs as its portable path: compute_90 -> sm_90, not 90a)
#   sm80_bwd80 / sm80_bwd90   src/kernels/sm80/bwd.cu likewise
#   sm90_bwd   src/kernels/sm90/bwd.cu for sm_90a (the Hopper backward)
# to cubins, disassembles each to $SASS_DIR/LABEL.UNIT.sass (default /tmp/cudadent-sass), and
# where listings labelled base exist, compares every kernel (dev/bench/sass_compare.py --kernel
# '' --map: kernels renamed since base are paired by $SASS_MAP, lines OLD_SUBSTRING NEW_SUBSTRING).
# UNITS="sm90_fwd" limits the units. cuobjdump comes as in local_sass.sh. Not used by the build.
set -euo pipefail
cd "$(dirname "$0")/../.."
label=${1:?usage: local_sass_all.sh LABEL [nvcc flags]}; shift
dir=${SASS_DIR:-/tmp/cudadent-sass}; mkdir -p "$dir"
objdump=$(command -v cuobjdump || true)
if [ -z "$objdump" ]; then
  objdump=$(find "$dir/tools" -name cuobjdump -type f 2>/dev/null | head -1 || true)
  if [ -z "$objdump" ]; then
    pip download --no-deps -q -d "$dir/wheels" nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm
    for w in "$dir"/wheels/*.whl; do python3 -m zipfile -e "$w" "$dir/tools"; done
    objdump=$(find "$dir/tools" -name cuobjdump -type f | head -1)
  fi
  chmod +x "$(dirname "$objdump")"/*
  export PATH="$(dirname "$objdump"):$PATH" # cuobjdump runs nvdisasm
fi
declare -A src=([sm90_fwd]=src/kernels/sm90/fwd.cu [sm90_fwdvl]=src/kernels/sm90/fwd_varlen.cu
                [sm80_fwd80]=src/kernels/sm80/fwd.cu
                [sm80_fwd90]=src/kernels/sm80/fwd.cu [sm80_bwd80]=src/kernels/sm80/bwd.cu
                [sm80_bwd90]=src/kernels/sm80/bwd.cu [sm90_bwd]=src/kernels/sm90/bwd.cu)
declare -A arch=([sm90_fwd]=90a [sm90_fwdvl]=90a [sm80_fwd80]=80 [sm80_fwd90]=90 [sm80_bwd80]=80 [sm80_bwd90]=90
                 [sm90_bwd]=90a)
units=${UNITS:-sm90_fwd sm90_fwdvl sm90_bwd sm80_fwd80 sm80_fwd90 sm80_bwd80 sm80_bwd90}
pids=()
for u in $units; do
  a=${arch[$u]}
  nvcc -cubin -o "$dir/$label.$u.cubin" -gencode=arch=compute_$a,code=sm_$a \
    --expt-relaxed-constexpr -O3 -DNDEBUG -DCUDADENT_DEV -Iinclude -Isrc -Xptxas -v "$@" "${src[$u]}" \
    > "$dir/$label.$u.ptxas" 2>&1 &
  pids+=($!)
  # two at a time
  if [ ${#pids[@]} -ge ${SASS_JOBS:-2} ]; then wait "${pids[0]}" || { cat "$dir/$label.${units%% *}.ptxas"; exit 1; }; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p" || { echo "a compile failed: see $dir/$label.*.ptxas"; exit 1; }; done
for u in $units; do
  "$objdump" -sass "$dir/$label.$u.cubin" > "$dir/$label.$u.sass"
  grep -E "C75|spill" "$dir/$label.$u.ptxas" | grep -v " 0 bytes spill" | sort | uniq -c || true
  if [ -f "$dir/base.$u.sass" ] && [ "$label" != base ]; then
    echo "== $u"
    python3 dev/bench/sass_compare.py --kernel '' ${SASS_MAP:+--map "$SASS_MAP"} \
      "$dir/base.$u.sass" "$dir/$label.$u.sass"
  fi
done
