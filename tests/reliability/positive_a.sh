#!/bin/sh
# positive_a.sh MAMBA2 REL_INPUTS DIR cpu|cuda
# A > 0 makes the true recurrence grow without bound (exp(δA) > 1).  The driver
# must refuse it (exit 2, a message naming A.npy and the head, nothing written);
# A = 0 (no decay) is valid and passes --check against the float64 reference.
# Exit 77 without the backend.
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
# shellcheck disable=SC2086
err=$("$mamba2" --backend "$backend" --inputs "$dir/pos" --save "$dir/out_pos" $flags 2>&1)
rc=$?
echo "$err"
[ "$rc" -eq 2 ] || { echo "FAIL: A > 0 exited $rc, not 2"; exit 1; }
echo "$err" | grep -q "A.npy: A\[0\] = 5" || { echo "FAIL: the message does not name A.npy and head 0"; exit 1; }
[ ! -e "$dir/out_pos" ] || { echo "FAIL: rejected, but wrote outputs"; exit 1; }
rm -rf "$dir"
echo "ok: A > 0 refused, A = 0 checked"
