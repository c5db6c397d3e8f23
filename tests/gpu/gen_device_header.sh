#!/bin/sh
# Regenerates compiler/cuda_device.c (the device header as a C string) from
# compiler/tile_device.cuh.  Usage: sh tests/gpu/gen_device_header.sh [root] [out]
root=${1:-$(dirname "$0")/../..}
out=${2:-$root/compiler/cuda_device.c}
{
  echo '/* cuda_device.c: GENERATED from tile_device.cuh by tests/gpu/gen_device_header.sh;'
  echo ' * edit that file, then rerun the script.  The NVRTC-safe device header that'
  echo ' * every generated kernel includes (emit_cuda.h: cuda_device_header). */'
  echo '#include "emit_cuda.h"'
  echo ''
  echo 'const char cuda_device_header[] ='
  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$/\\n"/' "$root/compiler/tile_device.cuh"
  echo '    ;'
} > "$out"
