#!/bin/sh
# expect_exit.sh CODE PATTERN COMMAND...: passes when COMMAND exits with CODE
# and its stderr contains PATTERN.
want=$1; pattern=$2; shift 2
err=$("$@" 2>&1 >/dev/null)
rc=$?
echo "$err"
[ "$rc" -eq "$want" ] || { echo "FAIL: exit $rc, expected $want"; exit 1; }
echo "$err" | grep -q -- "$pattern" || { echo "FAIL: message lacks '$pattern'"; exit 1; }
echo "ok: exit $rc"
