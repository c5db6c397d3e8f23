#!/usr/bin/env bash
# Installs what tilec needs to build and test, where it is missing (Debian/Ubuntu, as root):
# flex and bison (the front end), cmake, a C compiler and a C++ one (the emu backend), clang (the libFuzzer target),
# and Debian's python3-numpy (the example tests compare with NumPy).
# The CUDA toolkit is optional and is not installed here: without it the CPU half
# builds and tests, and the GPU tests are skipped.
set -euo pipefail
need=()
command -v flex  >/dev/null 2>&1 || need+=(flex)
command -v bison >/dev/null 2>&1 || need+=(bison)
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v cc    >/dev/null 2>&1 || need+=(gcc)
# a C++ compiler: the emu backend compiles the GPU's code for the host (the `emu` tests)
command -v c++   >/dev/null 2>&1 || need+=(g++)
command -v make  >/dev/null 2>&1 || need+=(make)
# gcc only recommends the C library headers; an image without recommends lacks them.
[ -e /usr/include/stdio.h ] || need+=(libc6-dev)
if [ "${TILEC_NO_FUZZ:-0}" != 1 ]; then
  command -v clang >/dev/null 2>&1 || need+=(clang)
fi
if ! /usr/bin/python3 -c 'import numpy' >/dev/null 2>&1; then need+=(python3-numpy); fi

install() {
  if [ "$(id -u)" != 0 ]; then
    echo "tilec: missing $*; run as root or install them" >&2
    exit 1
  fi
  echo "tilec: installing $*" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "$@" >/dev/null
}
if [ ${#need[@]} -gt 0 ]; then install "${need[@]}"; fi

# libFuzzer: Debian ships it in libclang-rt-*-dev, which clang only recommends.
links_fuzzer() {
  local d rc
  d=$(mktemp -d)
  printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' > "$d/f.c"
  clang -fsanitize=fuzzer "$d/f.c" -o "$d/f" >/dev/null 2>&1 && rc=0 || rc=1
  rm -rf "$d"
  return $rc
}
if [ "${TILEC_NO_FUZZ:-0}" != 1 ] && ! links_fuzzer; then
  install libclang-rt-dev
  links_fuzzer || { echo "tilec: clang cannot link -fsanitize=fuzzer programs" >&2; exit 1; }
fi
