#!/usr/bin/env bash
# flash-attn's own tests against cudadent
# =======================================
# Runs flash-attention's tests/test_flash_attn.py ("fa2") and hopper/test_flash_attn.py
# ("hopper"), pinned in build-fa/COMMIT, against this checkout's python/cudadent, and writes
# what happened to every case and a summary (summary.txt, summary.json) into $OUT (default
# build-fa-out/): cases collected, passed, failed, refused by cudadent (by category: head dim,
# head_dim_v, softcap, dropout, alibi, varlen not provided, kvcache/paged not provided, dtype
# fp8, qv, attention_chunk, ...) and skipped by the tests' own conditions.
#
# Pieces (all in dev/flash_attn_tests/):
#   prepare.sh    run HERE (needs the fetched flash-attention git copy): fills build-fa/ (ignored
#                 by git) with the two test files, hopper's padding.py / test_util.py and
#                 flash_attn's pure-Python helpers (bert_padding, layers/rotary, ops/triton/rotary)
#   shim/         `flash_attn` (FA2) and `flash_attn_interface` (FA3) modules mapping flash-attn's
#                 API onto cudadent.flash_attn_func; what cudadent lacks raises ShimRefusal
#   fa_refusals.py  which exceptions are refusals, and their category
#   fa_plugin.py  pytest plugin: refusals -> skips "cudadent refused [category]", one JSON line
#                 per case, --fa-sample / --fa-shard / --fa-budget, hopper's attention_chunk
#                 sub-runs dropped (see its doc)
#   summarize.py  the JSON lines -> summary.json / summary.txt (merges shards and calls)
#
# On the GPU box (no network; torch, pytest, einops and triton are in its image):
#   carry: build-fa and the folder holding libcudadent.so (e.g. build-carry)
#   CUDADENT_LIBRARY=$PWD/build-carry/libcudadent.so dev/flash_attn_tests/run.sh --sample 1500
#
# Options:
#   --files fa2,hopper   which files (default both)
#   --funcs A,B          only these test functions (node ids FILE::FUNC: collects only them);
#                        "core": issue 27's dense set (no varlen, no kvcache); default: all
#   --sample N           N cases per file, stratified by test function (equal shares), seeded
#   --seed S             the sample's seed (default 0)
#   --shard K/N          the K-th of N disjoint parts of each file's selection
#   --budget SECONDS     wall time for the whole run (default 480): each file gets its share;
#                        cases not started in time are "not run: time budget"
#   --timeout SECONDS    per-case limit through pytest-timeout where installed (default 300)
#   --keep-attention-chunk   run hopper's attention_chunk sub-runs (each such case then refused)
#   -k EXPR              pytest's -k (e.g. -k "not alibi and not dropout")
#   -- ARGS              the rest goes to pytest as it is
# Cost: collecting all of fa2 (508,777 cases, 304,128 of them kvcache) takes ~70 s of CPU, of
# hopper (200,128) ~35 s (measured on the 2-core dev box; less on the GPU box); --funcs narrows it.
#
# Collected at flash-attn 0251105a (GPU box parametrization, capability 9.0): fa2 508,777 cases
# (dense core 101,150; varlen 103,494; kvcache 304,130; internals 3), hopper 200,128 (output
# 14,400; varlen 31,680; kvcache 152,064; combine 1,621; other 363). Dense core of both = 115,550,
# issue 27's count. A full pass does not fit one 10-minute call: the dense core is an estimated
# 25-40 min of GPU time (cases cudadent takes ~10-50 ms each, FA3's up to ~0.2 s with their
# sub-runs; refusals ~2-5 ms, more where the test builds its reference first), kvcache's 456k
# refusals alone ~30-60 min. Use --sample (the summary scales each function's sample up to its
# collected count, time included) or --shard K/N over several calls (summarize.py merges them).
#
# Deviations from running flash-attn's tests as they are: FLASH_ATTENTION_DISABLE_PACKGQA=TRUE
# (see below); hopper's attention_chunk sub-runs dropped unless --keep-attention-chunk
# (fa_plugin.py); S_dmask is None (read only under dropout, which is refused).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${OUT:-$repo/build-fa-out}
fa=${FA_DIR:-$repo/build-fa}
files=fa2,hopper funcs= sample=0 seed=0 shard= budget=480 timeout=300 keep_chunk=
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --files) files=$2; shift 2 ;;
    --funcs) funcs=$2; shift 2 ;;
    --sample) sample=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --shard) shard=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --keep-attention-chunk) keep_chunk=1; shift ;;
    -k) extra+=(-k "$2"); shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "run.sh: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
[ -f "$fa/COMMIT" ] || { echo "run.sh: $fa/COMMIT missing: run dev/flash_attn_tests/prepare.sh here and carry build-fa" >&2; exit 2; }
mkdir -p "$out"
python=${PYTHON:-python3}
export FA_TESTS_SRC="$fa/src"
export PYTHONPATH="$repo/python:$here:$here/shim${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
# FA3's pack_gqa is a scheduling knob (cudadent ignores it): the pack_gqa=True sub-run would
# repeat the pack_gqa=False call exactly. num_splits is kept (its loops also drive combine tests).
export FLASH_ATTENTION_DISABLE_PACKGQA=${FLASH_ATTENTION_DISABLE_PACKGQA:-TRUE}
commit=$(head -1 "$fa/COMMIT" | cut -d' ' -f1)
{ echo "flash-attn $commit"; git -C "$repo" log -1 --format='cudadent %h %s' 2>/dev/null; } \
  | tee "$out/env.txt"
# torch, the device and the library; with a GPU but no loadable libcudadent every case would
# fail: stop here (set CUDADENT_LIBRARY)
"$python" - <<'PY' 2>&1 | tee -a "$out/env.txt"; [ "${PIPESTATUS[0]}" = 0 ] || exit 2
import sys
import torch, cudadent
gpu = torch.cuda.is_available()
print("torch", torch.__version__, torch.cuda.get_device_name() if gpu else "(no CUDA device)")
try:
    print("libcudadent", cudadent.library_path(), cudadent.library_version())
except Exception as e:
    print("libcudadent not loaded:", e)
    sys.exit(1 if gpu else 0)
PY
core_fa2=test_flash_attn_output,test_flash_attn_qkvpacked,test_flash_attn_causal,test_flash_attn_deterministic,test_flash_attn_splitkv,test_flash_attn_race_condition,test_flash_attn_bwd_overflow,test_flash_attn_bwd_transpose
core_hopper=test_flash_attn_output
tmo=()
"$python" -c 'import pytest_timeout' 2>/dev/null && tmo=(--timeout "$timeout")
IFS=, read -ra file_list <<< "$files"
deadline=$(( $(date +%s) + budget ))
n_left=${#file_list[@]}
for label in "${file_list[@]}"; do
  case $label in
    fa2) path=$fa/fa2/test_flash_attn.py; core=$core_fa2 ;;
    hopper) path=$fa/hopper/test_flash_attn.py; core=$core_hopper ;;
    *) echo "run.sh: unknown file $label" >&2; exit 2 ;;
  esac
  targets=("$path")
  if [ -n "$funcs" ]; then
    f=$funcs; [ "$f" = core ] && f=$core
    IFS=, read -ra fl <<< "$f"; targets=()
    for fn in "${fl[@]}"; do grep -q "^def $fn(" "$path" && targets+=("$path::$fn"); done
    [ ${#targets[@]} -gt 0 ] || { echo "run.sh: $label: none of $f"; n_left=$((n_left - 1)); continue; }
  fi
  now=$(date +%s); share=$(( (deadline - now) / n_left )); n_left=$((n_left - 1))
  # the plugin's budget starts at the first case: leave the collection its time (~60 s)
  case_budget=$(( share > 120 ? share - 60 : 60 ))
  results=$out/$label.jsonl
  rm -f "$results" "$results.gz"
  opts=(-p fa_plugin -p no:cacheprovider -c /dev/null --rootdir "$fa" -q -rN --tb=line
        --fa-results "$results" --fa-label "$label" --fa-budget "$case_budget")
  [ "$sample" != 0 ] && opts+=(--fa-sample "$sample" --fa-seed "$seed")
  [ -n "$shard" ] && opts+=(--fa-shard "$shard")
  [ -n "$keep_chunk" ] && opts+=(--fa-keep-attention-chunk)
  echo "== $label: ${#targets[@]} target(s), budget ${share} s (cases ${case_budget} s)"
  t0=$(date +%s)
  timeout -k 10 $((share + 30)) "$python" -m pytest "${opts[@]}" "${tmo[@]}" "${extra[@]}" \
      "${targets[@]}" > "$out/$label.log" 2>&1
  rc=$?
  echo "   pytest exit $rc after $(( $(date +%s) - t0 )) s; log: $label.log ($(tail -1 "$out/$label.log"))"
done
"$python" "$here/summarize.py" --out "$out" --commit "$commit" "$out"/*.jsonl
# what comes back from the GPU box is limited: compress the per-case records and logs
for f in "$out"/*.jsonl "$out"/*.log; do [ -f "$f" ] && gzip -f "$f"; done
exit 0
