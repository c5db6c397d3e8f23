#!/bin/sh
# bad_inputs.sh MAMBA2 NPY_FILL WORKDIR
# Each ill-formed input folder must give exit status 2, a message naming the
# file (and shapes), and no output written.
set -u
mamba2=$1; fill=$2; work=$3
rm -rf "$work"; mkdir -p "$work"
failures=0

# A good folder: batch 1, seqlen 70, heads 4, headdim 32, groups 2, dstate 16.
good="$work/good"
"$mamba2" --backend cpu --seqlen 70 --heads 4 --groups 2 --headdim 32 --dstate 16 --batch 1 \
    --z --dt-bias --initial-states --save-inputs "$good" --save "$work/good_out" --check-pairs 1 >/dev/null || {
    echo "FAIL: could not make the good input folder"; exit 1; }

# expect NAME PATTERN [extra mamba2 args]: run on $work/NAME, want exit 2 + PATTERN in stderr.
expect() {
    name=$1; pattern=$2; shift 2
    out="$work/$name.out"
    "$mamba2" --backend cpu --inputs "$work/$name" --save "$out" "$@" >"$work/$name.stdout" 2>"$work/$name.stderr"
    rc=$?
    if [ $rc -ne 2 ]; then echo "FAIL $name: exit $rc, expected 2"; cat "$work/$name.stderr"; failures=$((failures+1)); return; fi
    if ! grep -q -- "$pattern" "$work/$name.stderr"; then
        echo "FAIL $name: message lacks '$pattern':"; cat "$work/$name.stderr"; failures=$((failures+1)); return; fi
    if [ -e "$out" ]; then echo "FAIL $name: $out was written"; failures=$((failures+1)); return; fi
    echo "ok   $name: $(cat "$work/$name.stderr")"
}
variant() { rm -rf "$work/$1"; cp -r "$good" "$work/$1"; }

variant missing_x;   rm "$work/missing_x/x.npy"
expect missing_x "x.npy"
variant missing_C;   rm "$work/missing_C/C.npy"
expect missing_C "C.npy"
variant dt_shape;    "$fill" "$work/dt_shape/dt.npy" f32 0.01 1 69 4
expect dt_shape "dt.npy: shape (1, 69, 4), expected (1, 70, 4)"
variant x_rank;      "$fill" "$work/x_rank/x.npy" f32 0.5 1 70 128
expect x_rank "x.npy: shape (1, 70, 128)"
variant x_f64;       "$fill" "$work/x_f64/x.npy" f64 0.5 1 70 4 32
expect x_f64 "x.npy: dtype f64"
variant groups;      "$fill" "$work/groups/B.npy" f32 0.5 1 70 3 16; "$fill" "$work/groups/C.npy" f32 0.5 1 70 3 16
expect groups "not a multiple of groups 3"
variant c_shape;     "$fill" "$work/c_shape/C.npy" f32 0.5 1 70 2 32
expect c_shape "C.npy: shape (1, 70, 2, 32), expected (1, 70, 2, 16)"
variant b_seqlen;    "$fill" "$work/b_seqlen/B.npy" f32 0.5 1 71 2 16
expect b_seqlen "B.npy: shape (1, 71, 2, 16) disagrees with x.npy (1, 70, 4, 32)"
variant d_shape;     "$fill" "$work/d_shape/D.npy" f32 1 4 31
expect d_shape "D.npy: shape (4, 31)"
variant z_shape;     "$fill" "$work/z_shape/z.npy" f32 1 1 70 4 16
expect z_shape "z.npy: shape (1, 70, 4, 16)"
variant init_shape;  "$fill" "$work/init_shape/initial_states.npy" f32 1 1 4 16 32
expect init_shape "initial_states.npy: shape (1, 4, 16, 32)"
variant bias_shape;  "$fill" "$work/bias_shape/dt_bias.npy" f32 1 5
expect bias_shape "dt_bias.npy: shape (5,), expected (4,)"
variant a_shape;     "$fill" "$work/a_shape/A.npy" f32 -1 4 1
expect a_shape "A.npy: shape (4, 1)"
variant garbage;     echo "not a numpy file" > "$work/garbage/dt.npy"
expect garbage "dt.npy"
variant chunk
expect chunk "unsupported chunk size 32" --chunk 32

[ $failures -eq 0 ] && echo "all bad-input cases rejected" && exit 0
exit 1
