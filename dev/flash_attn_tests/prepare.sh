#!/usr/bin/env bash
# Fills build-fa/ (ignored by git: build*/) with flash-attn's own test files and the pure-Python
# helpers they import, at a pinned commit, from a local git copy of Dao-AILab/flash-attention
# (the session's `fetch github:Dao-AILab/flash-attention` puts one under /work/.mirror). Run here,
# where that copy is; the GPU box has no network, so build-fa/ travels with the GPU call (carry).
# Nothing fetched is committed to this repository.
#   dev/flash_attn_tests/prepare.sh [GIT_DIR]      (FA_COMMIT=... to pin another commit)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
git_dir=${1:-/work/.mirror/Dao-AILab+flash-attention/repo}
commit=${FA_COMMIT:-0251105a2fb19d2957484b7f023cd8c115286ced}
out=${FA_DIR:-$repo/build-fa}
g() { git --git-dir="$git_dir" "$@"; }
g cat-file -e "$commit^{commit}" 2>/dev/null || {
  echo "prepare.sh: commit $commit is not in $git_dir (fetch the repository again?)" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out/fa2" "$out/hopper" "$out/src/flash_attn/layers" "$out/src/flash_attn/ops/triton"
take() { g show "$commit:$1" > "$out/$2"; }
take tests/test_flash_attn.py fa2/test_flash_attn.py
# hopper/: the test and the two helper modules it imports as top-level modules; NOT hopper's
# __init__.py (pytest would then import the test as package 'hopper') nor its
# flash_attn_interface.py (the shim's must be the one found)
take hopper/test_flash_attn.py hopper/test_flash_attn.py
take hopper/padding.py hopper/padding.py
take hopper/test_util.py hopper/test_util.py
# flash_attn's pure-Python helpers; the shim package appends src/flash_attn to its __path__
for f in bert_padding.py layers/__init__.py layers/rotary.py ops/__init__.py \
         ops/triton/__init__.py ops/triton/rotary.py; do
  take "flash_attn/$f" "src/flash_attn/$f"
done
g show -s --format='%H %cI %s' "$commit" > "$out/COMMIT"
echo "github:Dao-AILab/flash-attention (BSD-3-Clause), files as of that commit" >> "$out/COMMIT"
echo "build-fa: $(head -1 "$out/COMMIT" | cut -c1-60)... -> $out ($(du -sh "$out" | cut -f1))"
