#!/bin/sh
# inputs_roundtrip.sh MAMBA2 WORKDIR [mamba2 args...]
# Random inputs saved with --save-inputs must read back with --inputs and give
# the same y and final state (both runs pass the check, and the saved outputs
# are byte-identical).
set -eu
mamba2=$1; work=$2; shift 2
rm -rf "$work"; mkdir -p "$work"
"$mamba2" --backend cpu "$@" --save-inputs "$work/in" --save "$work/out1" --check
"$mamba2" --backend cpu --inputs "$work/in" "$@" --save "$work/out2" --check
for f in y.npy final_states.npy; do
    cmp "$work/out1/$f" "$work/out2/$f" || { echo "FAIL: $f differs between the two runs"; exit 1; }
done
echo "round trip ok"
