#!/bin/sh
# positive_a.sh MAMBA2 REL_INPUTS DIR cpu|cuda
# A > 0 makes the true recurrence grow without bound (exp(δA) > 1).  Passes if
# the driver rejects it (exit 2, nothing written) or -- what it does today --
# the kernels' clamp of every exponent at 0 makes such a head run as if A were
# 0: outputs finite and equal to a run with those A set to 0 (which itself
# passes --check against the float64 reference).  Exit 77 without the backend.
set -u
mamba2=$1 gen=$2 dir=$3 backend=$4
shape="--batch 1 --seqlen 300 --heads 4 --headdim 16 --dstate 16 --seed 3"
flags="--dtype f32 --precision fp32 --dt-softplus"
rm -rf "$dir" && mkdir -p "$dir" || exit 1
# shellcheck disable=SC2086
"$gen" extreme "$dir/pos" $shape --A 5,-1,0.5,-20 || exit 1
# shellcheck disable=SC2086
"$gen" extreme "$dir/zero" $shape --A 0,-1,0,-20 || exit 1
# shellcheck disable=SC2086
"$mamba2" --backend "$backend" --inputs "$dir/zero" --check --save "$dir/out_zero" $flags
rc=$?
[ "$rc" -eq 77 ] && exit 77
[ "$rc" -eq 0 ] || { echo "FAIL: the A = 0 run exited $rc"; exit 1; }
# Rejecting A > 0 as bad input (exit 2, a message naming A) would be as good.
# shellcheck disable=SC2086
err=$("$mamba2" --backend "$backend" --inputs "$dir/pos" --save "$dir/out_pos" $flags 2>&1)
rc=$?
echo "$err"
if [ "$rc" -eq 2 ] && echo "$err" | grep -q "A"; then
  [ ! -e "$dir/out_pos" ] || { echo "FAIL: rejected, but wrote outputs"; exit 1; }
  rm -rf "$dir"; echo "ok: A > 0 rejected"; exit 0
fi
[ "$rc" -eq 0 ] || { echo "FAIL: the A > 0 run exited $rc"; exit 1; }
"$gen" finite "$dir/out_pos/y.npy" "$dir/out_pos/final_states.npy" || { echo "FAIL: non-finite outputs for A > 0"; exit 1; }
"$gen" compare "$dir/out_pos/y.npy" "$dir/out_zero/y.npy" 1e-6 || { echo "FAIL: A > 0 differs from A = 0"; exit 1; }
"$gen" compare "$dir/out_pos/final_states.npy" "$dir/out_zero/final_states.npy" 1e-6 || exit 1
rm -rf "$dir"
echo "ok"
