#!/bin/sh
# state_dtype_same_y.sh MAMBA2 WORKDIR [mamba2 args...]
# With bf16 inputs, per-chunk states stored in bf16 (the default) and in f32
# give the same y, byte for byte: kernel 3 rounds the states to bf16 for its
# mma either way.  The default rests on this.  Both runs pass the check; the
# first also states that it ran with bf16 states.
set -eu
mamba2=$1; work=$2; shift 2
rm -rf "$work"; mkdir -p "$work"
"$mamba2" --backend cpu --dtype bf16 "$@" --save "$work/default" --check > "$work/default.txt"
cat "$work/default.txt"
grep -q 'bf16 inputs, bf16 states' "$work/default.txt" || { echo "FAIL: the default is not bf16 states"; exit 1; }
"$mamba2" --backend cpu --dtype bf16 "$@" --state-dtype f32 --save "$work/f32" --check
cmp "$work/default/y.npy" "$work/f32/y.npy" || { echo "FAIL: y differs between bf16 and f32 states"; exit 1; }
echo "same y with bf16 and f32 states"
