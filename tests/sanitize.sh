#!/usr/bin/env bash
# make sanitize: the host code under AddressSanitizer and UndefinedBehaviorSanitizer, on a machine
# with or without a GPU (no kernel runs where there is none). Builds into BUILD_DIR with
# -fsanitize=address,undefined on every C file (library, reference, CLI, CPU tests) and on the
# host side of the .cu files (their launchers' size queries run in the API tests; device code is
# unchanged), then runs the C tests and the CLI test (tests/run_tests.sh; not the install test,
# whose programs are built without the sanitizers, nor pytest, whose interpreter is not). Any
# report fails the run (-fno-sanitize-recover, halt_on_error). Kernels are built for Hopper only
# (the fastest build that still compiles every launcher).
#   tests/sanitize.sh [BUILD_DIR [JOBS]]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-sanitize}
jobs=${2:-2}
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
cuda_san="-Xcompiler=-fsanitize=address -Xcompiler=-fsanitize=undefined"
cuda_san+=" -Xcompiler=-fno-sanitize-recover=all -Xcompiler=-fno-omit-frame-pointer"
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUDADENT_GPU_ARCHS=90a \
  "-DCMAKE_C_FLAGS=$san" "-DCMAKE_CUDA_FLAGS=$cuda_san" \
  "-DCMAKE_EXE_LINKER_FLAGS=$san" "-DCMAKE_SHARED_LINKER_FLAGS=$san" > "$build/configure.log" 2>&1 ||
  { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j "$jobs"
# protect_shadow_gap=0: the CUDA runtime maps memory where ASan keeps its shadow gap
export ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=1:halt_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
CUDADENT_CTEST_ARGS="-E install" exec "$root/tests/run_tests.sh" "$build" none
