#!/bin/sh
# emu_stale_dirs.sh GPU_CHECK SRC_DIR WORKDIR: a context of the emu backend
# removes the directories that contexts of dead processes left in $TMPDIR
# (runtime/emu_backend.c, remove_stale_dirs), and only those: not a live
# process's, nor one without a lock file or whose lock someone holds.
set -u
gpu_check=$1 src=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir" || exit 1
dead=$(sh -c 'echo $$')                         # a process that has ended
mkdir "$dir/tilec-emu-$dead-abcdef" "$dir/tilec-emu-$$-abcdef" "$dir/tilec-emu-kept" "$dir/tilec-emu-$dead-nolock" \
  "$dir/tilec-emu-$dead-locked" || exit 1
touch "$dir/tilec-emu-$dead-abcdef/lock" "$dir/tilec-emu-$$-abcdef/lock" "$dir/tilec-emu-$dead-locked/lock" || exit 1
# a lock held (here by this shell, through flock(1) on fd 9) keeps its directory, whatever its PID
locked=0
if command -v flock >/dev/null 2>&1; then
  exec 9>"$dir/tilec-emu-$dead-locked/lock" && flock -n 9 && locked=1
fi
cp "$src/../../examples/vector_add.tile" "$dir/" || exit 1
echo 'file=vector_add.tile kernel=vector_add grid=4 x=[1000] y=[1000] z=[1000]' >"$dir/one.spec"
TMPDIR=$dir GPU_CHECK_BACKEND=emu "$gpu_check" "$dir/one.spec" || { echo "FAIL: the launch"; exit 1; }
[ ! -e "$dir/tilec-emu-$dead-abcdef" ] || { echo "FAIL: a dead process's directory is left"; exit 1; }
[ -d "$dir/tilec-emu-$$-abcdef" ] || { echo "FAIL: a live process's directory was removed"; exit 1; }
[ -d "$dir/tilec-emu-kept" ] || { echo "FAIL: a directory of another name was removed"; exit 1; }
[ -d "$dir/tilec-emu-$dead-nolock" ] || { echo "FAIL: a directory without a lock file was removed"; exit 1; }
if [ "$locked" = 1 ]; then
  [ -d "$dir/tilec-emu-$dead-locked" ] || { echo "FAIL: a directory whose lock is held was removed"; exit 1; }
  exec 9>&-
fi
# left: this shell's, "kept", the one without a lock file, and the locked one
[ "$(ls "$dir" | grep -c '^tilec-emu-')" -eq $((3 + locked)) ] || { echo "FAIL: the launch's own directory is left"; ls "$dir"; exit 1; }
rm -rf "$dir"
echo ok
