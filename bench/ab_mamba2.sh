#!/bin/bash
# bench/ab_mamba2.sh: variants of the Mamba-2 forward timed in one run, one
# row each, per-kernel medians (mamba2 --bench), for the GPU machine.
#   bash bench/ab_mamba2.sh 'LABEL|ENV=V ...|MAMBA2 FLAGS' ...
# Each variant runs at the shape in $SHAPE (default the anchor
# (8, 4096, 80, 64, 128, 1, 256) bf16) plus its own flags, with its
# environment (e.g. TILEC_NO_REMAT=1, MAMBA2_TILE_DIR=DIR for another version
# of the programs).  Builds first (bench/run_gpu.sh --build-only) unless
# $TILEC_GPU_BUILD already holds a build.  Example:
#   bash bench/ab_mamba2.sh 'base||' 'no remat|TILEC_NO_REMAT=1|' '4 warps||--warps-out 4'
set -u
cd "$(dirname "$0")/.."
BUILD=${TILEC_GPU_BUILD:-/tmp/build}
export TILEC_GPU_BUILD=$BUILD
M2=$BUILD/examples/mamba2/mamba2
if [ ! -x "$M2" ]; then bash bench/run_gpu.sh --build-only || exit 1; fi
SHAPE=${SHAPE:---batch 8 --seqlen 4096 --heads 80 --headdim 64 --dstate 128 --groups 1 --chunk 256 --dtype bf16}
ITERS=${ITERS:-20}
printf '%-28s %10s %10s %10s %10s %10s\n' variant cumsum state scores out total
for v in "$@"; do
  label=${v%%|*}; rest=${v#*|}; envs=${rest%%|*}; flags=${rest#*|}
  # shellcheck disable=SC2086  # the env and flag strings are meant to split
  out=$(env $envs "$M2" --backend cuda --bench --iters "$ITERS" $SHAPE $flags 2>&1)
  ms() { echo "$out" | awk -v k="$1" '$1 == k { print $2 }'; }
  if [ -z "$(ms total)" ]; then
    printf '%-28s failed: %s\n' "$label" "$(echo "$out" | tail -1)"
  else
    printf '%-28s %10s %10s %10s %10s %10s\n' "$label" "$(ms chunk_cumsum)" "$(ms fwd_pass_state)$(ms scan_states)" \
      "$(ms chunk_scores)$(ms round_tf32)" "$(ms compute_out)$(ms ssd_scan)" "$(ms total)"
  fi
done
