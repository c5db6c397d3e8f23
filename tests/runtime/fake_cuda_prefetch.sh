#!/bin/sh
# fake_cuda_prefetch.sh TILEC FAKE_LIB_DIR WORKDIR MATMUL_TILE PREFETCH_API: the CUDA backend's
# compiling ahead (tile_kernel_prefetch, runtime/workers.c) on the fake
# driver (fake_cuda.c), through the autotuner on examples/matmul.tile (`tilec run --tune`), which
# compiles the points of a tune space ahead on several threads:
#  - on 1 thread and on 2, every point is compiled ahead and then taken by its
#    tile_kernel_get (none compiled again), and the two runs write the same
#    images byte for byte (threads change nothing but the time);
#  - with those entries on disk nothing is compiled, ahead or not;
#  - the point the tuner compiled first (it checks the call with the first
#    value of each axis) is not compiled again ahead;
#  - prefetch_api.c's requests: bad ones skipped, one kernel asked twice and
#    again from another module of the same source compiled once, and the
#    variant a launch on shifted arrays needs compiled ahead too.
set -u
tilec=$1 lib=$2 dir=$3 m=$4 api=$5
rm -rf "$dir" && mkdir -p "$dir" || exit 1
cd "$dir" || exit 1
fail=0
tune() {   # tune THREADS CACHE OUT [-D ...]: matmul_bf16 on 256^3
  threads=$1 cache=$2 out=$3
  shift 3
  LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" TILEC_CACHE_LOG=1 TILEC_COMPILE_THREADS=$threads \
    TILE_CACHE_DIR="$cache" "$tilec" run "$m" --kernel matmul_bf16 --backend cuda --tune \
    --grid 'cdiv(M,BM),cdiv(N,BN)' a=a.npy:bf16[256,256] b=b.npy:bf16[256,256] c=c.npy:f32[256,256] "$@" \
    >"$out" 2>&1 || { echo "FAIL: tilec exited $? ($out)"; cat "$out"; fail=1; }
}
expect() {   # expect FILE COUNT PATTERN
  n=$(grep -c "$3" "$1")
  [ "$n" -eq "$2" ] || { echo "FAIL: $1: $n lines of '$3', expected $2"; cat "$1"; fail=1; }
}
# 4 points (BM, BN in 64, 128): the first compiled by the call's check, the 3 others ahead, then taken
for t in 1 2; do
  tune $t "$dir/c$t" t$t.out -D BK=32 -D num_warps=4
  expect t$t.out 1 "compiled 3 of 3 kernel variants ahead (0 on disk already) on $t thread"
  expect t$t.out 3 "kernel matmul_bf16: compiled ahead"
  expect t$t.out 1 "kernel matmul_bf16: compiled ("
done
n1=$(ls "$dir"/c1/cuda-* | wc -l)
[ "$n1" -eq 4 ] || { echo "FAIL: $n1 kernel entries on 1 thread, expected 4"; fail=1; }
for f in "$dir"/c1/cuda-*; do
  cmp -s "$f" "$dir/c2/$(basename "$f")" || { echo "FAIL: $(basename "$f"): not the same on 2 threads"; fail=1; }
done
# the same space again without its cached winner: every image from the disk
rm -f "$dir"/c2/tune-*
tune 2 "$dir/c2" again.out -D BK=32 -D num_warps=4
expect again.out 1 "compiled 0 of 3 kernel variants ahead (3 on disk already)"
expect again.out 0 "kernel matmul_bf16: compiled"
expect again.out 4 "kernel matmul_bf16: from the disk cache"
# without a disk cache: 2 points (4 and 8 warps), the first compiled by the check, the other ahead
tune 2 off dedup.out -D BM=32 -D BN=32 -D BK=32
expect dedup.out 1 "compiled 1 of 1 kernel variants ahead"
expect dedup.out 1 "kernel matmul_bf16: compiled ahead"
# the API's requests (with a disk cache; the second module's kernel, the same source, is the image compiled ahead)
LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" TILEC_CACHE_LOG=1 TILEC_COMPILE_THREADS=2 \
  TILE_CACHE_DIR="$dir/api" "$api" >api.out 2>&1 || { echo "FAIL: prefetch_api exited $?"; cat api.out; fail=1; }
expect api.out 1 "compiled 2 of 3 kernel variants ahead (0 on disk already)"
expect api.out 1 "kernel variants ahead"   # (its last call, all compiled, asks the backend nothing)
expect api.out 3 "kernel scale: compiled ahead"
expect api.out 0 "kernel scale: from the disk cache"
expect api.out 0 "kernel scale: compiled ("
[ $fail -eq 0 ] && echo "ok: compiled ahead on 1 and 2 threads, the same images; read from the disk; no point twice; the API's requests"
exit $fail
