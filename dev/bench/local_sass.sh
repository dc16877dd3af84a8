#!/usr/bin/env bash
# local_sass.sh - the sm90 forward's SASS on the build machine (no GPU needed).
#   dev/bench/local_sass.sh LABEL [nvcc flags ...]   e.g. local_sass.sh q2 -DSM90_Q_STAGES=2
# Compiles src/kernels/sm90/fwd.cu to a cubin (~15 s), disassembles it to $SASS_DIR/LABEL.sass
# (default /tmp/cudadent-sass), prints ptxas's spills and C75xx notices, and, where a listing
# labelled base exists there, dev/bench/sass_compare.py base -> LABEL. cuobjdump is not part of
# the CUDA install here: the first run fetches NVIDIA's wheels of it and nvdisasm (pip download)
# into $SASS_DIR/tools. Not used by the build or CI.
set -euo pipefail
cd "$(dirname "$0")/../.."
label=${1:?usage: local_sass.sh LABEL [nvcc flags]}; shift
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
nvcc -cubin -o "$dir/$label.cubin" -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr \
  -O3 -DCUDADENT_DEV -Iinclude -Isrc -Xptxas -v "$@" src/kernels/sm90/fwd.cu > "$dir/$label.ptxas" 2>&1
"$objdump" -sass "$dir/$label.cubin" > "$dir/$label.sass"
grep -E "C75|spill" "$dir/$label.ptxas" | grep -v " 0 bytes spill" | sort | uniq -c || true
if [ -f "$dir/base.sass" ] && [ "$label" != base ]; then
  python3 dev/bench/sass_compare.py "$dir/base.sass" "$dir/$label.sass"
fi
echo "$dir/$label.sass"
