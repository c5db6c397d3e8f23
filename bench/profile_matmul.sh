#!/bin/bash
# bench/profile_matmul.sh: where a matmul kernel's time goes, mma.sync beside wgmma,
# for the GPU machine.  Builds (as bench/run_gpu.sh does), makes two random bf16
# inputs of N x N, then for each variant (mma.sync with TILEC_WGMMA=0; wgmma) runs
# one `tilec run` launch of examples/matmul.tile's matmul_bf16 under Nsight Compute
# and prints its time, occupancy, SM / tensor / L2 / DRAM throughput and top warp
# stall reasons, and counts the SASS instructions that matter (HMMA, HGMMA, LDGSTS,
# LDSM, WARPGROUP.ARRIVE / DEPBAR / BAR) in the cubin it cached; the SASS goes to
# $OUT/<variant>.sass.  Then, unless PROFILE_SOURCE=0, the stall samples per SASS
# instruction (ncu's source page) to $OUT/source_<variant>.csv, and the hottest
# instructions with the ones before them (bench/ncu_hot.py).
#   bash bench/profile_matmul.sh [N [BM BN BK WARPS]]      (default 8192, 128 256 64 8)
# Knobs: PROFILE_VARIANTS (default "mma_sync wgmma"; mma_sync's operands go by TMA
# on an sm_90 device, mma_cp_async: by cp.async, TILEC_MMA_TMA=0), PROFILE_SKIP_BUILD=1.
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD=${TILEC_GPU_BUILD:-/tmp/build}
OUTDIR=${OUT:-/tmp/tilec-profile}
mkdir -p "$OUTDIR"
N=${1:-8192}; BM=${2:-128}; BN=${3:-256}; BK=${4:-64}; WARPS=${5:-8}
if [ -z "${PROFILE_SKIP_BUILD:-}" ]; then bash bench/run_gpu.sh --build-only >/dev/null || exit 1; fi
python3 -c "
import numpy as np
rng = np.random.default_rng(1)
for name in ('a', 'b'):
    np.save('/tmp/mm_%s.npy' % name, rng.standard_normal(($N, $N), dtype=np.float32))
" || exit 1
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
CUOBJ=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
METRICS=gpu__time_duration.sum,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,sm__warps_active.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__pcsamp_warps_issue_stalled_barrier,smsp__pcsamp_warps_issue_stalled_long_scoreboard,smsp__pcsamp_warps_issue_stalled_short_scoreboard,smsp__pcsamp_warps_issue_stalled_mio_throttle,smsp__pcsamp_warps_issue_stalled_math_pipe_throttle,smsp__pcsamp_warps_issue_stalled_wait,smsp__pcsamp_warps_issue_stalled_lg_throttle,smsp__pcsamp_warps_issue_stalled_membar,smsp__pcsamp_warps_issue_stalled_sleeping,smsp__pcsamp_warps_issue_stalled_selected,smsp__pcsamp_warps_issue_stalled_not_selected,smsp__pcsamp_warps_issue_stalled_dispatch_stall
# one launch of the matmul under ncu with its arguments ($@) and the variant's environment
profile() {
  env $envs "$NCU" --clock-control none --kernel-name regex:tk_matmul "$@" \
    "$BUILD/tools/tilec" run examples/matmul.tile --kernel matmul_bf16 --backend cuda \
    -D BM=$BM -D BN=$BN -D BK=$BK -D num_warps=$WARPS --grid "cdiv(M,BM),cdiv(N,BN)" \
    a=/tmp/mm_a.npy b=/tmp/mm_b.npy c=/tmp/mm_c.npy:f32[$N,$N]
}
for variant in ${PROFILE_VARIANTS:-mma_sync wgmma}; do
  export TILE_CACHE_DIR=$OUTDIR/cache_$variant
  rm -rf "$TILE_CACHE_DIR"
  case $variant in
    wgmma) envs="TILEC_WGMMA=1" ;;
    mma_cp_async) envs="TILEC_WGMMA=0 TILEC_MMA_TMA=0" ;;
    *) envs="TILEC_WGMMA=0" ;;
  esac
  echo "== $variant: matmul_bf16 N=$N BM=$BM BN=$BN BK=$BK warps=$WARPS"
  profile --metrics $METRICS > "$OUTDIR/ncu_$variant.txt" 2>&1
  grep -E 'gpu__time|registers|shared_mem|occupancy_limit|warps_active|throughput|cycles_active|bank_conflicts|stalled' \
    "$OUTDIR/ncu_$variant.txt" | awk '{v=$NF; if ($1 ~ /pcsamp/ && v+0 < 2) next; printf "    %-70s %s %s\n", $1, $(NF-1), $NF}'
  for f in $(find "$TILE_CACHE_DIR" -type f 2>/dev/null); do
    python3 -c 'import sys; d=open(sys.argv[1],"rb").read(); i=d.find(b"\x7fELF"); i>=0 and open("/tmp/k.cubin","wb").write(d[i:])' "$f" || continue
    "$CUOBJ" --dump-sass /tmp/k.cubin > "$OUTDIR/$variant.sass" 2>/dev/null || continue
    s="$OUTDIR/$variant.sass"
    printf '    SASS: HMMA=%d HGMMA=%d LDGSTS=%d LDSM=%d WARPGROUP.ARRIVE=%d WARPGROUP.DEPBAR=%d DEPBAR=%d BAR.SYNC=%d FENCE=%d\n' \
      $(grep -c 'HMMA' "$s") $(grep -c 'HGMMA' "$s") $(grep -c 'LDGSTS' "$s") $(grep -c 'LDSM' "$s") \
      $(grep -c 'WARPGROUP.ARRIVE' "$s") $(grep -c 'WARPGROUP.DEPBAR' "$s") $(grep -c ' DEPBAR' "$s") \
      $(grep -c 'BAR.SYNC' "$s") $(grep -c 'FENCE' "$s")
  done
  if [ "${PROFILE_SOURCE:-1}" != 0 ]; then
    profile --section SourceCounters --section WarpStateStats -f -o "/tmp/report_$variant" > /dev/null 2>&1 &&
      "$NCU" --import "/tmp/report_$variant.ncu-rep" --page source --csv --print-source sass \
        > "$OUTDIR/source_$variant.csv" 2>/dev/null &&
      python3 bench/ncu_hot.py "$OUTDIR/source_$variant.csv" 8
  fi
done
echo "SASS and ncu output in $OUTDIR"
