#!/bin/bash
# bench/run_gpu.sh: everything the GPU machine should do, in one call:
# build (flex / bison from .devdeps/*.deb), the GPU tests, the NVRTC tests,
# then the benchmarks, with a short table last.
#   bash bench/run_gpu.sh [--quick | --build-only]
#   (--quick: tests only, no benchmarks; --build-only: the build, for bench/ab_mamba2.sh)
# Knobs: TILEC_GPU_TESTS=REGEX (only those GPU tests), TILEC_SKIP_NVRTC=1,
#        TILEC_BENCH_ONLY=rows|matmul|bf16|tf32|tf32nt, TILE_CACHE_DIR (default /tmp/tilec-cache).
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD=${TILEC_GPU_BUILD:-/tmp/build}
export TILE_CACHE_DIR=${TILE_CACHE_DIR:-/tmp/tilec-cache}
if ! command -v bison >/dev/null 2>&1 && ls .devdeps/*.deb >/dev/null 2>&1; then
  mkdir -p /tmp/fb && for f in .devdeps/*.deb; do dpkg -x "$f" /tmp/fb; done
  export PATH=/tmp/fb/usr/bin:$PATH M4=/tmp/fb/usr/bin/m4 BISON_PKGDATADIR=/tmp/fb/usr/share/bison
  FLEXINC=-DFLEX_INCLUDE_DIR=/tmp/fb/usr/include
fi
echo "== build"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release ${FLEXINC:-} >/tmp/tilec-cmake.log 2>&1 || { tail -30 /tmp/tilec-cmake.log; exit 1; }
cmake --build "$BUILD" -j16 >/tmp/tilec-build.log 2>&1 || { grep -E "error|Error" /tmp/tilec-build.log | head -30; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null
[ "${1:-}" = "--build-only" ] && exit 0
echo "== ctest -L gpu"
ctest --test-dir "$BUILD" -L gpu ${TILEC_GPU_TESTS:+-R "$TILEC_GPU_TESTS"} --output-on-failure -j4 2>&1 | tail -60
if [ -z "${TILEC_SKIP_NVRTC:-}" ]; then
  echo "== ctest -L nvrtc"
  ctest --test-dir "$BUILD" -L nvrtc -j4 2>&1 | tail -4
fi
[ "${1:-}" = "--quick" ] && exit 0
echo "== benchmarks"
BENCH=$BUILD/bench/gpu/bench_gpu
if [ ! -x "$BENCH" ]; then   # bench/gpu not part of the CMake build: build it here
  CUDA=${CUDA_HOME:-/usr/local/cuda}
  BENCH=/tmp/bench_gpu
  cc -O2 -std=gnu11 -o "$BENCH" bench/gpu/bench_gpu.c -Iruntime -Icompiler -I"$CUDA/include" \
     "$BUILD/runtime/libtile.a" "$BUILD/compiler/libtilec_compiler.a" -L"$CUDA/lib64" \
     -lnvrtc -lcublas -ldl -lm -lpthread -Wl,-rpath,"$CUDA/lib64" || exit 1
fi
"$BENCH" "$ROOT" 2>&1
