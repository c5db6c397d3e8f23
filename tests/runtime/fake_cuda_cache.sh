#!/bin/sh
# fake_cuda_cache.sh MAMBA2 FAKE_LIB_DIR WORKDIR: the CUDA backend's host
# side on the fake driver (fake_cuda.c, libcuda.so.1 in FAKE_LIB_DIR):
# Mamba-2's forward in several modes (sm_90a code: tensor maps, TMA stores,
# occupancy lowered while ptxas spills), each run three times: without the
# kernel cache, from an empty one and from the entries that run wrote.  Every
# launch must pass its kernel all its parameters (the fake aborts otherwise),
# and each run must launch each kernel with the parameter count, block and
# shared memory of the run without the cache: an image launched with another
# emission's facts fails.  TILEC_CACHE_LOG shows the cache compiled in the
# empty one's run, read in the full one's, and at least one image read back at
# a lowered occupancy.
set -u
m2=$1 lib=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir" || exit 1
# (checked against the reference, which the fake's outputs, never computed,
# fail: exit 1 after the check's verdict is expected, any other failure is not)
shape="--backend cuda --batch 1 --seqlen 256 --heads 2 --groups 1 --headdim 64 --dstate 128 --chunk 256"
fail=0 i=0
for mode in "--dtype bf16 --state-dtype bf16 --carry tf32 --scores fused --pass chunks" "--dtype bf16" \
            "--dtype f32" "--dtype f32 --precision fp32" "--dtype f16 --heads 4"; do
  i=$((i + 1))
  # no cache: each launch from the emission its image was compiled from; then an empty cache, then its entries
  for run in nocache cold warm; do
    cache="$dir/cache$i"
    [ $run = nocache ] && cache=off
    # shellcheck disable=SC2086  # the flag strings are meant to split
    LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" FAKE_CUDA_LOG="$dir/$i.$run.log" \
      TILEC_CACHE_LOG=1 TILE_CACHE_DIR="$cache" "$m2" $shape $mode >"$dir/$i.$run.out" 2>&1
    rc=$?
    if [ $rc -ne 1 ] || ! grep -q "fake sm_90" "$dir/$i.$run.out" || ! grep -q "FAIL (tolerance" "$dir/$i.$run.out"; then
      echo "FAIL ($mode, $run): exit $rc before the check's verdict"; tail -5 "$dir/$i.$run.out"; fail=1
    fi
  done
  # the empty cache's run compiles (ahead, all kernels at once: tile_kernel_prefetch), the full one's compiles nothing
  if ! grep -q "compiled ahead (" "$dir/$i.cold.out" || grep -q "compiled [(a]" "$dir/$i.warm.out" ||
     ! grep -q "from the disk cache" "$dir/$i.warm.out"; then
    echo "FAIL ($mode): the kernel cache was not filled, or not read"; grep "tilec: kernel" "$dir/$i.cold.out" "$dir/$i.warm.out"; fail=1
  fi
  if [ ! -s "$dir/$i.nocache.log" ]; then
    echo "FAIL ($mode): no launch reached the driver"; fail=1
  elif ! cmp -s "$dir/$i.nocache.log" "$dir/$i.cold.log" || ! cmp -s "$dir/$i.nocache.log" "$dir/$i.warm.log"; then
    echo "FAIL ($mode): launches with the kernel cache differ from those without:"
    diff "$dir/$i.nocache.log" "$dir/$i.cold.log"; diff "$dir/$i.nocache.log" "$dir/$i.warm.log"; fail=1
  else
    echo "ok   ($mode): $(sort -u "$dir/$i.nocache.log" | wc -l) launches, the same with the cache empty and full"
  fi
done
# at least one image the rule lowered in occupancy, read back and emitted again at its cap
if ! grep -q "from the disk cache (occupancy cap [1-9]" "$dir"/*.warm.out; then
  echo "FAIL: no kernel was lowered in occupancy: the hit that emits again at the cap went untested"; fail=1
fi
exit $fail
