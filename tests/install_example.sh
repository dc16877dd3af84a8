#!/usr/bin/env bash
# Installs the built library into a temporary prefix, extracts the C example from README.md (the
# block between the 'readme-example' markers), builds it against the installed copy through
# pkg-config and runs it. Without a GPU the example must still run and report the library's
# no-device status (exit 0); with one it runs a real forward.
# usage: install_example.sh BUILD_DIR SOURCE_DIR LIBCUDART_PATH CUDA_INCLUDE_DIR...
set -euo pipefail
build=$1 src=$2 cudart=$3
shift 3
cuda_includes=()
for dir in "$@"; do cuda_includes+=("-I$dir"); done
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in include/cudadent.h lib/pkgconfig/cudadent.pc lib/cmake/cudadent/cudadentConfig.cmake; do
  [ -f "$prefix/$f" ] || [ -f "$prefix/${f/lib\//lib64/}" ] || { echo "missing $f in the install"; exit 1; }
done
awk '/<!-- readme-example:begin -->/{on=1; next} /<!-- readme-example:end -->/{on=0} on' \
  "$src/README.md" | sed '/^```/d' > "$prefix/example.c"
[ -s "$prefix/example.c" ] || { echo "no example found in README.md"; exit 1; }
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/lib64/pkgconfig"
# the example calls the CUDA runtime itself: the libcudart CMake found for this toolkit
cc -std=c11 -Wall -Wextra -Werror -o "$prefix/example" "$prefix/example.c" \
  $(pkg-config --cflags --libs cudadent) "${cuda_includes[@]}" "$cudart" \
  -Wl,-rpath,"$(pkg-config --variable=libdir cudadent)" -Wl,-rpath,"$(dirname "$cudart")"
"$prefix/example"
echo "README example: built against the installed library with pkg-config and ran"
