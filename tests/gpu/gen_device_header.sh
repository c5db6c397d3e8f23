#!/bin/sh
# Regenerates a header as a C string: compiler/cuda_device.c (the device header,
# from compiler/tile_device.cuh), or with `emu` last runtime/emu_device.c (the
# host's emulation of CUDA, from runtime/emu_device.h).
# Usage: sh tests/gpu/gen_device_header.sh [root] [out] [cuda|emu]
root=${1:-$(dirname "$0")/../..}
which=${3:-cuda}
if [ "$which" = emu ]; then
  out=${2:-$root/runtime/emu_device.c}
  src=runtime/emu_device.h; from=emu_device.h; include=emu_backend.h; symbol=emu_device_header
  what='The host emulation of CUDA that the emu backend compiles every kernel with (emu_backend.h: emu_device_header).'
else
  out=${2:-$root/compiler/cuda_device.c}
  src=compiler/tile_device.cuh; from=tile_device.cuh; include=emit_cuda.h; symbol=cuda_device_header
  what='The NVRTC-safe device header that every generated kernel includes (emit_cuda.h: cuda_device_header).'
fi
{
  echo "/* $(basename "$out"): GENERATED from $from by tests/gpu/gen_device_header.sh;"
  echo ' * edit that file, then rerun the script.'
  echo " * $what */"
  echo "#include \"$include\""
  echo ''
  echo "const char $symbol[] ="
  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$/\\n"/' "$root/$src"
  echo '    ;'
} > "$out"
