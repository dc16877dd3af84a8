#!/usr/bin/env bash
# make test: every test suite, then one summary of them all: each suite's counts, each skip
# reason once with the number of tests it skipped, and last the line 'N passed, M skipped, K
# failed'. Exit status 1 if any test failed.
#   tests/run_tests.sh BUILD_DIR [PYTHON]
# PYTHON "none": no pytest (make sanitize); $CUDADENT_CTEST_ARGS: more ctest arguments (-E ...).
# Suites: ctest in BUILD_DIR (the C test runner, the install + README example test, the CLI
# test), then pytest on tests/python where pytest imports. Each appends its counts to the file
# $CUDADENT_TEST_COUNTS, one tab-separated line per suite and per skip reason:
#   suite <name> <passed> <skipped> <failed>
#   skip  <name> <count> <reason>
# (tests/test_main.c, tests/cli_rejects.sh, tests/install_example.sh, tests/python/conftest.py).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
python=${2:-python3}
export CUDADENT_TEST_COUNTS="$build/test-counts.tsv"
: > "$CUDADENT_TEST_COUNTS"

# shellcheck disable=SC2086 # CUDADENT_CTEST_ARGS holds several words
(cd "$build" && ctest --output-on-failure ${CUDADENT_CTEST_ARGS:-})
ctest_rc=$?
if [ $ctest_rc -ne 0 ] && ! awk -F'\t' '$1 == "suite" && $5 > 0 { found = 1 } END { exit !found }' \
     "$CUDADENT_TEST_COUNTS"; then
  # a failure that wrote no counts (a crash, a missing program)
  printf 'suite\tctest (a test that wrote no counts failed: see above)\t0\t0\t1\n' \
    >> "$CUDADENT_TEST_COUNTS"
fi

py_suite="tests/python (pytest)"
if [ "$python" = none ]; then
  :
elif "$python" -c "import pytest" 2>/dev/null; then
  echo "==== $py_suite"
  PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" CUDADENT_LIBRARY="$build/libcudadent.so" \
    "$python" -m pytest -q -rs "$root/tests/python"
  py_rc=$?
  if [ $py_rc -ne 0 ] && ! grep -q "^suite	$py_suite	" "$CUDADENT_TEST_COUNTS"; then
    printf 'suite\t%s\t0\t0\t1\n' "$py_suite (pytest exit $py_rc, no counts)" >> "$CUDADENT_TEST_COUNTS"
  fi
else
  printf 'suite\t%s\t0\t1\t0\nskip\t%s\t1\t%s\n' "$py_suite" "$py_suite" \
    "pytest is not installed for $python (pip install '.[test]')" >> "$CUDADENT_TEST_COUNTS"
fi

echo "==== summary"
awk -F'\t' '
  $1 == "suite" { if (!($2 in p)) order[++n] = $2; p[$2] += $3; s[$2] += $4; f[$2] += $5
                  P += $3; S += $4; F += $5 }
  $1 == "skip"  { why[$2] = why[$2] sprintf("      %d skipped: %s\n", $3, $4) }
  END {
    for (i = 1; i <= n; ++i) {
      k = order[i]
      printf "  %-52s %d passed, %d skipped, %d failed\n", k, p[k], s[k], f[k]
      printf "%s", why[k]
    }
    printf "%d passed, %d skipped, %d failed\n", P, S, F
    exit F > 0
  }' "$CUDADENT_TEST_COUNTS"
