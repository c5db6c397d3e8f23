#!/bin/sh
# gpu_only.sh REL_LARGE COMMAND...: exit 77 (skipped) when there is no usable
# CUDA backend, before COMMAND spends minutes making inputs; else run it.
probe=$1; shift
"$probe" --backend cuda --probe
rc=$?
[ "$rc" -eq 0 ] || exit 77
exec "$@"
