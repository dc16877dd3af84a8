#!/usr/bin/env bash
# dev/tools/unpack_carry.sh - sourced by the GPU run scripts: unpack_carry SRC DST unpacks a folder
# made by dev/tools/prebuild.sh (libcudadent.so.0, or .so.0.gz with PREBUILD_GZ=1, beside
# cudadent-bench and cudadent_tests) into DST (emptied first), with the libcudadent.so link, so that
# LD_LIBRARY_PATH=DST runs DST's binaries on SRC's library. Returns non-zero if SRC is incomplete.
unpack_carry() {
  [ -d "$1" ] || return 1
  rm -rf "$2" && mkdir -p "$2" || return 1
  if [ -f "$1/libcudadent.so.0.gz" ]; then gzip -dc "$1/libcudadent.so.0.gz" > "$2/libcudadent.so.0"
  else cp -L "$1/libcudadent.so.0" "$2/"; fi || return 1
  ln -sf libcudadent.so.0 "$2/libcudadent.so" && cp "$1/cudadent-bench" "$1/cudadent_tests" "$2/"
}
