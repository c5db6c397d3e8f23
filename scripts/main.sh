#!/usr/bin/env bash
# Sets up, builds, and runs the main job: the Mamba-2 forward pass with its check
# against the float64 reference -- on the GPU if there is one, otherwise on the CPU
# (the interpreter) at a small shape.
set -euo pipefail
cd "$(dirname "$0")/.."
TILEC_NO_FUZZ=1 bash scripts/deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
if [ -x build/examples/mamba2/mamba2 ]; then
  exec build/examples/mamba2/mamba2 "$@"
fi
# Until the flagship exists: a small example kernel through tilec run.
exec build/tools/tilec run examples/vector_add.tile --kernel vector_add --grid 4 \
  x=/tmp/tilec_x.npy:f32[1000] y=/tmp/tilec_y.npy:f32[1000] z=/tmp/tilec_z.npy:f32[1000]
