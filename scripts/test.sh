#!/usr/bin/env bash
# Sets up and runs the whole test suite, as CI does:
#   1. a normal build and every CTest test (GPU tests are skipped without a GPU;
#      the `emu` ones run the GPU's code emulated on the host);
#   2. the same suite built with AddressSanitizer and UndefinedBehaviorSanitizer
#      (not the `emu` tests: their threads are fibers that switch stacks);
#   3. the libFuzzer target of the front end for a bounded time (needs clang).
# Options: --quick runs step 1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
quick=0; [ "${1:-}" = "--quick" ] && quick=1

echo "== build and test (RelWithDebInfo) =="
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"
[ $quick = 1 ] && exit 0

echo "== build and test under ASan + UBSan =="
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DTILEC_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"
# exitcode=86: a sanitizer report must not pass for the status 1 of an expected error.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=86 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=86 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE 'slow|fuzz|emu'

if command -v clang >/dev/null 2>&1; then
  echo "== fuzz the front end (libFuzzer, bounded time) =="
  CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DTILEC_FUZZ=ON >/dev/null
  cmake --build build-fuzz -j"$jobs" --target fuzz_frontend
  # Only the libFuzzer run: the replays (fuzz_replay, fuzz_replay_nvrtc) ran in the builds above.
  ctest --test-dir build-fuzz --output-on-failure -R '^fuzz_frontend$'
fi
