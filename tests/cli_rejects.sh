#!/usr/bin/env bash
# cudadent-bench refuses each bad input with the library's own status and message (exit 2), and
# says in one line that there is no GPU (exit 3) where there is none.
# usage: cli_rejects.sh path/to/cudadent-bench
set -uo pipefail
bench=$1
fail=0
expect() { # expected-exit expected-text args...
  local want_rc=$1 want_text=$2; shift 2
  local out rc
  out=$("$bench" "$@" 2>&1); rc=$?
  if [ "$rc" -ne "$want_rc" ] || ! grep -q -- "$want_text" <<<"$out"; then
    echo "FAIL: cudadent-bench $* -> rc $rc (want $want_rc), output: $out"; fail=1
  else
    echo "ok:   cudadent-bench $* -> $(head -1 <<<"$out")"
  fi
}
expect 2 "BAD_HEADS.*heads_q = 6 is not a multiple of heads_kv = 4" --heads 6 --heads-kv 4
expect 2 "UNSUPPORTED_HEAD_DIM.*head_dim = 80" --head-dim 80
expect 2 "BAD_WINDOW.*window_left = -3" --window -3,0
expect 2 "UNSUPPORTED_DTYPE.*FP8" --dtype fp8
expect 2 "BAD_SIZE.*batch = -1" --batch -1
expect 2 "BAD_SIZE.*heads_q = 0" --heads 0
expect 2 "SIZE_OVERFLOW.*batch = 70000" --batch 70000
expect 2 "--dtype expects bf16 or fp16" --dtype int8
expect 2 "unknown argument" --frobnicate
expect 2 "--iters expects an integer" --iters zero
expect 2 "--no-lse is forward-only" --no-lse --bwd
if ! nvidia-smi -L >/dev/null 2>&1; then
  expect 3 "no CUDA device" --batch 1 --seqlen-q 128 --heads 2 --head-dim 64
fi
exit $fail
