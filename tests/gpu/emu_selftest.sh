#!/bin/sh
# Builds and runs emu_selftest.cpp as the emu backend builds kernels
# (runtime/emu_backend.c: the same flags, emu_device.h force-included,
# compiler/tile_device.cuh as tile_device.h).  Usage: emu_selftest.sh ROOT WORKDIR
set -e
root=$1 dir=$2
rm -rf "$dir" && mkdir -p "$dir"
cp "$root/compiler/tile_device.cuh" "$dir/tile_device.h"
"${TILEC_EMU_CXX:-c++}" -std=c++17 -O1 -w -fno-strict-aliasing -U_FORTIFY_SOURCE -I"$dir" \
  -include "$root/runtime/emu_device.h" "$root/tests/gpu/emu_selftest.cpp" -o "$dir/emu_selftest"
"$dir/emu_selftest"
