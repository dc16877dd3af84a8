#!/usr/bin/env bash
# dev/tools/prebuild.sh - build on this machine (no GPU needed) what a GPU call runs, so the lent
# GPU spends no time compiling: build-carry/ (the working tree, sm_90a) and, for each TAG=FLAGS
# argument, build-carry-TAG/ (the tree with those dev knobs, -DCUDADENT_DEV). Each holds
# libcudadent.so.0 (and a relative libcudadent.so link), cudadent-bench and cudadent_tests, ~10 MB:
# name them in the run's carry and pass PREBUILT=build-carry PREBUILT_VAR=build-carry-TAG to
# dev/sm90_bwd/gpu_run.sh. The builds themselves go to build-prebuilt/ (ignored, like build*/).
#   dev/tools/prebuild.sh [lpt=-DSM90_BWD_LPT_GROUP=4] [det=-DSM90_BWD_DET_DESCENDING=1] ...
# PREBUILD_FLAGS (default empty) go to the C and the CUDA flags of every build, build-carry/'s
# included: a dispatch.h gate flipped for a GPU run before it is flipped in the tree, e.g.
#   PREBUILD_FLAGS=-DCUDADENT_SM90_BWD_WIDE_SOFTCAP=1 dev/tools/prebuild.sh
# (gpu_run.sh bwdwidesoftcap with PREBUILT=build-carry).
# PREBUILD_GZ=1: the library as libcudadent.so.0.gz (~11 MB instead of ~47 MB, so that two folders
# fit a run's 64 MiB carry; gpu_run.sh unpacks it), for gpu_run.sh's PREBUILT / PREBUILT_VAR only
# (dev/flash_attn_tests/run.sh loads build-carry/libcudadent.so as it is).
# With 2 cores, each build takes ~10 minutes; JOBS=N sets the parallelism.
set -euo pipefail
cd "$(dirname "$0")/../.."
jobs=${JOBS:-2}
pflags=${PREBUILD_FLAGS:-}
gz=${PREBUILD_GZ:-0}
build() { # build() DIR CARRY CUDA_FLAGS
  cmake -S . -B "$1" -DCMAKE_BUILD_TYPE=Release -DCUDADENT_GPU_ARCHS=90a "-DCMAKE_C_FLAGS=$pflags" \
    "-DCMAKE_CUDA_FLAGS=${pflags:+$pflags }$3" > "$1.configure.log" 2>&1
  cmake --build "$1" -j "$jobs" --target cudadent cudadent-bench cudadent_tests > "$1.build.log" 2>&1 \
    || { echo "prebuild: $1 failed, see $1.build.log"; tail -20 "$1.build.log"; exit 1; }
  rm -rf "$2" && mkdir -p "$2"
  if [ "$gz" = 1 ]; then gzip -6 -c "$1/libcudadent.so.0" > "$2/libcudadent.so.0.gz"
  else cp -L "$1/libcudadent.so.0" "$2/" && ln -s libcudadent.so.0 "$2/libcudadent.so"; fi
  cp "$1/cudadent-bench" "$1/tests/cudadent_tests" "$2/"
  echo "prebuild: $2 ($(du -sh "$2" | cut -f1)) from $1${3:+ with $3}${pflags:+ (PREBUILD_FLAGS $pflags)}"
}
mkdir -p build-prebuilt
build build-prebuilt/base build-carry ""
for spec in "$@"; do
  tag=${spec%%=*} flags=${spec#*=}
  [ -n "$tag" ] && [ "$tag" != "$spec" ] || { echo "prebuild: expected TAG=FLAGS, got '$spec'"; exit 2; }
  build "build-prebuilt/$tag" "build-carry-$tag" "-DCUDADENT_DEV $flags"
done
