#!/usr/bin/env bash
# cudadent-bench refuses each bad input with the library's own status and message, or with the
# range a flag takes (exit 2), and says in one line that there is no GPU (exit 3) where there is
# none. Each expectation counts as one test in make test's summary (CUDADENT_TEST_COUNTS).
# usage: cli_rejects.sh path/to/cudadent-bench
set -uo pipefail
bench=$1
passed=0 failed=0
expect() { # expected-exit expected-text args...
  local want_rc=$1 want_text=$2; shift 2
  local out rc
  out=$("$bench" "$@" 2>&1); rc=$?
  if [ "$rc" -ne "$want_rc" ] || ! grep -q -- "$want_text" <<<"$out"; then
    echo "FAIL: cudadent-bench $* -> rc $rc (want $want_rc), output: $out"; failed=$((failed + 1))
  else
    echo "ok:   cudadent-bench $* -> $(head -1 <<<"$out")"; passed=$((passed + 1))
  fi
}
# the library's own refusals
expect 2 "BAD_HEADS.*heads_q = 6 is not a multiple of heads_kv = 4" --heads 6 --heads-kv 4
expect 2 "UNSUPPORTED_HEAD_DIM.*head_dim = 264" --head-dim 264
expect 2 "UNSUPPORTED_HEAD_DIM.*head_dim_v = 264" --head-dim 64 --head-dim-v 264
expect 2 "BAD_SIZE.*head_dim_v = -8" --head-dim-v -8
expect 2 "BAD_SCALE.*softcap = -1" --softcap -1
expect 2 "--softcap expects a number" --softcap 3x
expect 2 "BAD_WINDOW.*window_left = -3" --window -3,0
expect 2 "UNSUPPORTED_DTYPE.*FP8" --dtype fp8
expect 2 "BAD_SIZE.*batch = -1" --batch -1
expect 2 "BAD_SIZE.*heads_q = 0" --heads 0
expect 2 "BAD_SIZE.*heads_kv = 0 must be > 0" --heads-kv 0
expect 2 "SIZE_OVERFLOW.*batch = 70000 exceeds 65535" --batch 70000
expect 2 "SIZE_OVERFLOW.*seqlen_q = 2000000000 exceeds 1073741824" --seqlen-q 2000000000
expect 2 "SIZE_OVERFLOW.*query tiles" --batch 65535 --heads 65535 --seqlen-q 64
# the CLI's own parsing: whole integers in range, naming the range
expect 2 "--seqlen-q expects an integer from 0 to 1073741824" --seqlen-q 1000000000000
expect 2 "--batch expects an integer from 0 to 65535, got '12abc'" --batch 12abc
expect 2 "--heads-kv expects an integer from 1 to 65535" --heads-kv " 4"
expect 2 "--window expects L,R" --window 5,3xyz
expect 2 "--window expects L,R" --window 4294967295,0
expect 2 "--window expects L,R" --window 5
expect 2 "--seed expects an integer from 1 to 18446744073709551615" --seed abc
expect 2 "--seed expects" --seed -1
expect 2 "--seed expects" --seed 0
expect 2 "--seed expects" --seed 18446744073709551616
expect 2 "--dtype expects bf16 or fp16" --dtype int8
expect 2 "unknown argument" --frobnicate
expect 2 "--iters expects an integer from 1" --iters zero
expect 2 "--graph expects an integer from 1" --graph 0
expect 2 "--no-lse is forward-only" --no-lse --bwd
expect 2 "--batch needs a value" --batch
# --varlen: Q:K pairs; the library checks the ragged batch (here: a window bound below -1)
expect 2 "--varlen expects Q:K pairs" --varlen 5:5,3
expect 2 "--varlen expects Q:K pairs" --varlen 5:-1
expect 2 "--varlen runs one ragged batch" --varlen 0:5,1:1 --suite default
expect 2 "BAD_WINDOW.*window_right = -2" --varlen 10:5,1:1 --head-dim 64 --window 3,-2
# --help: every flag with what it does and its default
expect 0 "--heads-kv HKV .*(default: H)" --help
expect 0 "--iters N .*(default 30)" -h
expect 0 "--head-dim-v DV .*(default: D)" --help
if ! nvidia-smi -L >/dev/null 2>&1; then
  expect 3 "no CUDA device\|no usable CUDA device" --batch 1 --seqlen-q 128 --heads 2 --head-dim 64 --seed 7
  expect 3 "no CUDA device\|no usable CUDA device" --batch 1 --seqlen-q 128 --heads 2 --head-dim 64 \
    --layout gapped --bwd --check --seed 7
  expect 3 "no CUDA device\|no usable CUDA device" --varlen 0:5,1:1,17:17,300:400 --heads 4 \
    --heads-kv 2 --head-dim 64 --causal --bwd --check --seed 7
fi
echo "$passed passed, 0 skipped, $failed failed"
if [ -n "${CUDADENT_TEST_COUNTS:-}" ]; then
  printf 'suite\tCLI refuses bad input (tests/cli_rejects.sh)\t%d\t0\t%d\n' "$passed" "$failed" \
    >> "$CUDADENT_TEST_COUNTS"
fi
[ "$failed" -eq 0 ]
