#!/usr/bin/env bash
# Installs the build into a temporary prefix and does exactly what README.md says to build and run
# a program against it: the C example (between the 'readme-example' markers) built with the
# pkg-config lines ('readme-pkg-config') and with the CMake lines ('readme-cmakelists',
# 'readme-cmake'), each block run as it is written with PREFIX and CUDA set. Also runs the
# installed cudadent-bench (its RUNPATH must find the library). Without a GPU the example must
# still run and report that there is no device (exit 0); with one it runs a real forward.
# usage: install_example.sh BUILD_DIR SOURCE_DIR CUDA_TOOLKIT_ROOT
set -euo pipefail
build=$1 src=$2
export CUDA=$3
work=$(mktemp -d)
export PREFIX="$work/prefix"
passed=0
step() { echo "ok:   $*"; passed=$((passed + 1)); }
counts() { # failed
  [ -n "${CUDADENT_TEST_COUNTS:-}" ] || return 0
  printf 'suite\tinstall + README example (tests/install_example.sh)\t%d\t0\t%d\n' "$passed" "$1" \
    >> "$CUDADENT_TEST_COUNTS"
}
trap 'rc=$?; [ $rc -eq 0 ] || { echo "FAIL (exit $rc) after $passed steps"; counts 1; }; rm -rf "$work"' EXIT

block() { # marker: the README block between <!-- marker:begin --> and <!-- marker:end -->
  awk -v b="<!-- $1:begin -->" -v e="<!-- $1:end -->" \
    'index($0, b) == 1 {on = 1; next} index($0, e) == 1 {on = 0} on' "$src/README.md" | sed '/^```/d'
}
cmake --install "$build" --prefix "$PREFIX" >/dev/null
for f in include/cudadent.h lib/pkgconfig/cudadent.pc lib/cmake/cudadent/cudadentConfig.cmake; do
  [ -f "$PREFIX/$f" ] || [ -f "$PREFIX/${f/lib\//lib64/}" ] || { echo "missing $f in the install"; exit 1; }
done
step "installed into a fresh prefix"

# the installed CLI starts from any prefix (no LD_LIBRARY_PATH)
env -u LD_LIBRARY_PATH "$PREFIX/bin/cudadent-bench" --help >/dev/null
step "installed bin/cudadent-bench starts ($(readelf -d "$PREFIX/bin/cudadent-bench" 2>/dev/null |
  grep -o 'R[UN]*PATH.*' || echo 'RUNPATH not read'))"

mkdir "$work/pc" "$work/cm"
for d in pc cm; do block readme-example > "$work/$d/example.c"; done
[ -s "$work/pc/example.c" ] || { echo "no example found in README.md"; exit 1; }
(cd "$work/pc" && env -u LD_LIBRARY_PATH bash -euo pipefail -c "$(block readme-pkg-config)")
step "README example built with README's pkg-config lines and ran"

block readme-cmakelists > "$work/cm/CMakeLists.txt"
(cd "$work/cm" && env -u LD_LIBRARY_PATH bash -euo pipefail -c "$(block readme-cmake)" \
   > "$work/cm/log" 2>&1) || { cat "$work/cm/log"; exit 1; }
tail -2 "$work/cm/log"
step "README example built with README's CMake lines and ran"
counts 0
