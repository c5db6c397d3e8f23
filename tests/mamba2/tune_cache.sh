#!/bin/sh
# tune_cache.sh MAMBA2 CACHEDIR [mamba2 args...]
# mamba2 --tune --check twice with TILE_CACHE_DIR=CACHEDIR (emptied first):
# both runs pass the check; the first times the four kernels' tune spaces and
# stores the winners, the second takes all four from the cache (no timing).
set -eu
mamba2=$1; cache=$2; shift 2
rm -rf "$cache"; mkdir -p "$cache"
TILE_CACHE_DIR=$cache; export TILE_CACHE_DIR
out1=$("$mamba2" --backend cpu --tune --verbose --check "$@" 2>&1) || { echo "$out1"; echo "FAIL: first run"; exit 1; }
echo "$out1"
echo "$out1" | grep -q "PASS" || { echo "FAIL: first run did not pass the check"; exit 1; }
n=$(echo "$out1" | grep -c "^tune: .*points timed" || true)
[ "$n" -eq 4 ] || { echo "FAIL: first run timed $n of the 4 kernels"; exit 1; }
out2=$("$mamba2" --backend cpu --tune --verbose --check "$@" 2>&1) || { echo "$out2"; echo "FAIL: second run"; exit 1; }
echo "$out2"
echo "$out2" | grep -q "PASS" || { echo "FAIL: second run did not pass the check"; exit 1; }
n=$(echo "$out2" | grep -c "^tune: .*(cache hit)" || true)
[ "$n" -eq 4 ] || { echo "FAIL: second run took $n of the 4 winners from the cache"; exit 1; }
n=$(echo "$out2" | grep -c "cached winner" || true)
[ "$n" -eq 4 ] || { echo "FAIL: the tuner's verbose output shows $n cached winners, not 4"; exit 1; }
echo "tune cache ok"
