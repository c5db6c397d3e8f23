#!/bin/sh
# generated.sh GPU_CHECK SRC_DIR WORKDIR COUNT SEED: COUNT programs of
# tests/fuzz/gen_hopper.py (seed SEED: the same ones every run) run by
# gpu_check against the interpreter, on the GPU or, with GPU_CHECK_BACKEND=emu,
# the emu backend.  Exit 77 (skipped) without python3 or a GPU.  Fails unless
# every program ran (each has one launch, run twice: aligned and shifted).
set -u
gpu_check=$1 src=$2 dir=$3 count=$4 seed=$5
command -v python3 >/dev/null 2>&1 || { echo "no python3: skipped"; exit 77; }
rm -rf "$dir" && mkdir -p "$dir" || exit 1
python3 "$src/../fuzz/gen_hopper.py" "$dir" "$count" "$seed" || exit 1
"$gpu_check" "$dir"/*.tile >"$dir/log" 2>&1
rc=$?
cat "$dir/log"
[ $rc -eq 0 ] || exit $rc
runs=$(sed -n 's/^\([0-9]*\) runs, .*/\1/p' "$dir/log" | tail -1)
[ "${runs:-0}" -ge $((2 * count)) ] || { echo "FAIL: ${runs:-no} runs for $count programs"; exit 1; }
