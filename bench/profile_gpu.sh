#!/bin/bash
# bench/profile_gpu.sh: where the time goes in the Mamba-2 kernels, for the GPU machine.
# Builds (as bench/run_gpu.sh does), times `mamba2 --bench` at the first anchor shape,
# then runs Nsight Compute over one launch of each kernel and prints, per kernel:
# time, registers, shared memory, occupancy, SM / tensor / DRAM throughput and the
# top warp stall reasons.  Also dumps the resource report of the cubins (ptxas-style,
# from cuobjdump) and counts the instructions that matter (HMMA, LDGSTS, LDSM, 128-bit
# LDG/STG) in the SASS.
#   bash bench/profile_gpu.sh [mamba2 shape flags...]
# Default shape: the anchor (8, 4096, 80, 64, 128, 1, 256) bf16.
# PROFILE_SOURCE=REGEX: also a source-level profile of the kernels matching REGEX
# (second forward's launches): per-SASS-instruction stall samples in
# $OUT/source_<kernel>.csv and the hottest instructions printed.
set -u
cd "$(dirname "$0")/.."
BUILD=${TILEC_GPU_BUILD:-/tmp/build}
export TILE_CACHE_DIR=${TILE_CACHE_DIR:-/tmp/tilec-cache}
OUTDIR=${OUT:-/tmp/tilec-profile}
mkdir -p "$OUTDIR"
if ! command -v bison >/dev/null 2>&1 && ls .devdeps/*.deb >/dev/null 2>&1; then
  mkdir -p /tmp/fb && for f in .devdeps/*.deb; do dpkg -x "$f" /tmp/fb; done
  export PATH=/tmp/fb/usr/bin:$PATH M4=/tmp/fb/usr/bin/m4 BISON_PKGDATADIR=/tmp/fb/usr/share/bison
  FLEXINC=-DFLEX_INCLUDE_DIR=/tmp/fb/usr/include
fi
if [ -z "${PROFILE_SKIP_BUILD:-}" ]; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release ${FLEXINC:-} >/tmp/tilec-cmake.log 2>&1 || { tail -30 /tmp/tilec-cmake.log; exit 1; }
  cmake --build "$BUILD" -j16 >/tmp/tilec-build.log 2>&1 || { grep -E "error|Error" /tmp/tilec-build.log | head -30; exit 1; }
fi
M2=$BUILD/examples/mamba2/mamba2
SHAPE=("$@")
[ ${#SHAPE[@]} -eq 0 ] && SHAPE=(--batch 8 --seqlen 4096 --heads 80 --headdim 64 --dstate 128 --groups 1 --chunk 256 --dtype bf16)
echo "== mamba2 --bench ${SHAPE[*]}"
"$M2" "${SHAPE[@]}" --backend cuda --bench --iters 20 2>&1 | tail -12
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
echo "== ncu (one launch of each kernel)"
"$NCU" --clock-control none --kernel-name regex:tk_ --launch-skip 3 --launch-count 3 \
  --metrics gpu__time_duration.sum,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__block_size,launch__grid_size,sm__warps_active.avg.pct_of_peak_sustained_active,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__pcsamp_warps_issue_stalled_barrier,smsp__pcsamp_warps_issue_stalled_long_scoreboard,smsp__pcsamp_warps_issue_stalled_short_scoreboard,smsp__pcsamp_warps_issue_stalled_mio_throttle,smsp__pcsamp_warps_issue_stalled_math_pipe_throttle,smsp__pcsamp_warps_issue_stalled_wait,smsp__pcsamp_warps_issue_stalled_not_selected,smsp__pcsamp_warps_issue_stalled_selected,smsp__pcsamp_warps_issue_stalled_lg_throttle,smsp__pcsamp_warps_issue_stalled_dispatch_stall,smsp__pcsamp_warps_issue_stalled_no_instructions,smsp__pcsamp_warps_issue_stalled_imc_miss,smsp__pcsamp_warps_issue_stalled_branch_resolving,smsp__pcsamp_warps_issue_stalled_drain,smsp__pcsamp_warps_issue_stalled_membar,smsp__pcsamp_warps_issue_stalled_sleeping,smsp__pcsamp_warps_issue_stalled_tex_throttle \
  "$M2" "${SHAPE[@]}" --backend cuda --bench --iters 1 --warmup 1 > "$OUTDIR/ncu.txt" 2>&1
grep -E '^  tk_|gpu__time|registers|shared_mem|block_size|grid_size|warps_active|occupancy_limit|throughput|hmma|lsu|bank_conflicts|stalled' "$OUTDIR/ncu.txt" | \
  awk '/^  tk_/ {print; next} {v=$NF; if ($1 ~ /pcsamp/ && v+0 < 2) next; printf "    %-70s %s %s\n", $1, $(NF-1), $NF}' | head -150
echo "== SASS of the cached cubins"
CUOBJ=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
for f in $(find "$TILE_CACHE_DIR" -type f -newer /tmp/tilec-build.log 2>/dev/null); do
  rm -f /tmp/k.cubin
  # a cache entry is a header and then the cubin: cut at the ELF magic
  python3 -c 'import sys; d=open(sys.argv[1],"rb").read(); i=d.find(b"\x7fELF"); i>=0 and open("/tmp/k.cubin","wb").write(d[i:])' "$f" 2>/dev/null || continue
  if "$CUOBJ" --dump-sass /tmp/k.cubin > /tmp/sass.txt 2>/dev/null; then
    name=$(grep -m1 -o 'Function : [A-Za-z0-9_]*' /tmp/sass.txt | cut -d' ' -f3)
    res=$("$CUOBJ" --dump-resource-usage /tmp/k.cubin 2>/dev/null | grep -o 'REG:[0-9]* STACK:[0-9]* SHARED:[0-9]* LOCAL:[0-9]*' | head -1)
    printf '%-34s %s HMMA=%d LDGSTS=%d LDSM=%d LDG128=%d STG=%d STG128=%d BAR=%d\n' "$name" "$res" \
      $(grep -c HMMA /tmp/sass.txt) $(grep -c LDGSTS /tmp/sass.txt) $(grep -c LDSM /tmp/sass.txt) \
      $(grep -c 'LDG.E.128' /tmp/sass.txt) $(grep -c 'STG.E' /tmp/sass.txt) $(grep -c 'STG.E.128' /tmp/sass.txt) $(grep -c 'BAR.SYNC' /tmp/sass.txt)
    case "$name" in *compute_out*|*fwd_pass_state*|*chunk_*) cp /tmp/sass.txt "$OUTDIR/$name.sass" 2>/dev/null;; esac
  fi
done
if [ -n "${PROFILE_SOURCE:-}" ]; then
  echo "== source-level stalls ($PROFILE_SOURCE)"
  "$NCU" --clock-control none --kernel-name "regex:$PROFILE_SOURCE" --launch-skip 2 --launch-count 2 \
    --section SourceCounters --section WarpStateStats --section SpeedOfLight --section Occupancy \
    --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section LaunchStats \
    --import-source no -f -o "$OUTDIR/src" \
    "$M2" "${SHAPE[@]}" --backend cuda --bench --iters 1 --warmup 1 > "$OUTDIR/ncu_src.txt" 2>&1
  "$NCU" --import "$OUTDIR/src.ncu-rep" --page details --csv > "$OUTDIR/details.csv" 2>&1
  "$NCU" --import "$OUTDIR/src.ncu-rep" --page source --csv --print-source sass > "$OUTDIR/source.csv" 2>&1
  head -c 600 "$OUTDIR/source.csv"; echo; wc -c "$OUTDIR/source.csv" "$OUTDIR/details.csv"
fi
