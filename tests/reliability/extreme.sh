#!/bin/sh
# extreme.sh MAMBA2 REL_INPUTS DIR cpu|cuda|emu "MAMBA2 FLAGS" "INPUT FLAGS"
# Writes an input folder at the numeric extremes (rel_inputs extreme), runs the
# Mamba-2 driver on it with softplus (--check against the float64 recurrence at
# the driver's default tolerance of the dtype), then checks that y and the
# final state are finite.  Exit 77 when the backend is not available.
set -u
mamba2=$1 gen=$2 dir=$3 backend=$4 run_flags=$5 input_flags=$6
if [ "$backend" = cuda ]; then   # skip before making inputs that may take minutes
  "$mamba2" --backend cuda --batch 1 --seqlen 16 --heads 1 --groups 1 --headdim 8 --dstate 16 >/dev/null 2>&1
  [ $? -eq 77 ] && { echo "no CUDA backend: skipped"; exit 77; }
fi
rm -rf "$dir" && mkdir -p "$dir" || exit 1
# shellcheck disable=SC2086  # the flag strings are meant to split
"$gen" extreme "$dir/in" $input_flags || exit 1
"$mamba2" --backend "$backend" --inputs "$dir/in" --dt-softplus --check --save "$dir/out" $run_flags
rc=$?
[ "$rc" -eq 77 ] && exit 77
[ "$rc" -eq 0 ] || { echo "FAIL: mamba2 exited $rc"; exit 1; }
"$gen" finite "$dir/out/y.npy" "$dir/out/final_states.npy" || { echo "FAIL: non-finite outputs"; exit 1; }
rm -rf "$dir"
echo "ok"
