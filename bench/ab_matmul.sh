#!/bin/bash
# bench/ab_matmul.sh: variants of the matmul benchmark (bench_gpu) timed in
# one call, alternated ROUNDS times, so that they share the GPU's state; one
# summary row per variant, size and round, for the GPU machine.
#   bash bench/ab_matmul.sh 'LABEL|ENV=V ...' ...
# Knobs: ONLY=bf16|tf32|tf32nt|... (TILEC_BENCH_ONLY, default bf16),
# CONFIGS=128x128x64x4,... (TILEC_BENCH_CONFIGS: BMxBNxBKxWARPS, any shapes; default bench_gpu's),
# ROUNDS (default 2).  Builds first (bench/run_gpu.sh --build-only) unless
# $TILEC_GPU_BUILD already holds a build.  Example, the seventh session's two
# mma.sync changes against the code before them:
#   ONLY=bf16,tf32 CONFIGS=128x128x64x4,128x128x32x4,128x256x32x8 bash bench/ab_matmul.sh \
#     'now|TILEC_WGMMA=0' 'ldsm whole|TILEC_WGMMA=0 TILEC_LDSM_WHOLE=1' \
#     'sixth session|TILEC_WGMMA=0 TILEC_LDSM_WHOLE=1 TILEC_EDGE_UNROLLED=1'
set -u
cd "$(dirname "$0")/.."
BUILD=${TILEC_GPU_BUILD:-/tmp/build}
export TILEC_GPU_BUILD=$BUILD TILE_CACHE_DIR=${TILE_CACHE_DIR:-/tmp/tilec-cache}
[ $# -gt 0 ] || { sed -n '2,13p' "$0"; exit 2; }
BENCH=$BUILD/bench/gpu/bench_gpu
if [ ! -x "$BENCH" ]; then bash bench/run_gpu.sh --build-only || exit 1; fi
[ -x "$BENCH" ] || { echo "no $BENCH (bench/gpu needs cuBLAS)"; exit 1; }
for round in $(seq "${ROUNDS:-2}"); do
  for v in "$@"; do
    label=${v%%|*}; envs=${v#*|}
    [ "$envs" = "$v" ] && envs=
    # shellcheck disable=SC2086  # the env string is meant to split
    out=$(env TILEC_BENCH_ONLY="${ONLY:-bf16}" ${CONFIGS:+"TILEC_BENCH_CONFIGS=$CONFIGS"} $envs "$BENCH" . 2>&1)
    rows=$(echo "$out" | sed -n '/^== summary/,$p' | grep '^matmul')
    if [ -z "$rows" ]; then
      printf 'round %s  %-24s failed: %s\n' "$round" "$label" "$(echo "$out" | tail -1)"
    else
      echo "$rows" | while IFS= read -r r; do printf 'round %s  %-24s %s\n' "$round" "$label" "$r"; done
    fi
    echo "$out" | grep -q "WRONG" && printf 'round %s  %-24s some configuration WRONG: see bench_gpu\n' "$round" "$label"
  done
done
