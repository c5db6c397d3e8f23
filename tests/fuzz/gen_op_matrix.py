#!/usr/bin/env python3
"""gen_op_matrix.py OUT_DIR [SEED]: one small kernel per file for every
operation x dtype x tile shape (x num_warps, x mma shape), to drive the CUDA
emitter and NVRTC over the whole matrix:
    python3 tests/fuzz/gen_op_matrix.py /tmp/ops
    build/tests/fuzz/fuzz_replay --nvrtc /tmp/ops
Many combinations are ill-typed on purpose; the checker rejects them and they
go no further.  One kernel per file, because a file with an error lowers none."""
import itertools, os, random, sys
random.seed(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
DT = "bool i8 i16 i32 i64 u8 u16 u32 u64 f16 bf16 f32 f64".split()
FL = "f16 bf16 f32 f64".split()
SH = [(1,), (2,), (8,), (32,), (128,), (512,), (4,1), (1,16), (2,4), (16,16), (64,32), (2,4,8), (1,1,1), (2,2,2,2), (8,1,4)]
UN = "exp exp2 log log2 sqrt rsqrt abs floor ceil sin cos tanh sigmoid isnan".split()
BIN = ["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "==", "<", "&&", "||", "maximum", "minimum", "pow", "cdiv"]
RED = "sum max min prod argmax argmin".split()
SCAN = "cumsum cumprod".split()
n = 0
def emit(body, params, hint=""):
    global n
    src = "kernel k(%s)%s {\n%s}\n" % (", ".join(params), hint, body)
    open(os.path.join(out, "g%05d.tile" % n), "w").write(src)
    n += 1
def shp(s): return "(" + ", ".join(map(str, s)) + ("," if len(s) == 1 else "") + ")"
def arr(name, dt, r): return "%s: %s[%s]" % (name, dt, ", ".join("_" for _ in range(r)))
def idx(r): return shp(tuple("bid(0)" if i == 0 else "0" for i in range(r)))
for dt in DT:
    for s in SH:
        r = len(s)
        ld = "    let t = load(x, index=%s, shape=%s);\n" % (idx(r), shp(s))
        P = [arr("x", dt, r)]
        for u in UN:
            for odt in [dt, "f32", "bool"]:
                emit(ld + "    store(y, index=%s, tile=%s(t));\n" % (idx(r), u), P + [arr("y", odt, r)])
        for b in BIN:
            e = "%s(t, t)" % b if b[0].isalpha() else "t %s t" % b
            for odt in [dt, "bool"]:
                emit(ld + "    store(y, index=%s, tile=%s);\n" % (idx(r), e), P + [arr("y", odt, r)])
            emit(ld + "    let s = item(load(x, index=%s, shape=%s));\n    store(y, index=%s, tile=%s);\n" % (idx(r), shp((1,)*r), idx(r), e.replace("t, t", "t, s").replace("t %s t" % b, "s %s t" % b)), P + [arr("y", dt, r)])
        for odt in DT + ["tf32"]:
            emit(ld + "    store(y, index=%s, tile=astype(astype(t, %s), %s));\n" % (idx(r), odt, dt), P + [arr("y", dt, r)])
            emit(ld + "    store(y, index=%s, tile=astype(t, %s));\n" % (idx(r), odt), P + [arr("y", odt, r)])
        for red in RED:
            odt = "i32" if red.startswith("arg") else dt
            for ax in range(r):
                for kd in (["false", "true"] if not red.startswith("arg") else ["false"]):
                    kw = ", keepdims=%s" % kd if not red.startswith("arg") else ""
                    orank = r if kd == "true" else r - 1
                    if orank == 0:
                        emit(ld + "    atomic_add(y, (0,), %s(t, axis=%d%s));\n" % (red, ax, kw), P + [arr("y", odt, 1)])
                    else:
                        emit(ld + "    store(y, index=%s, tile=%s(t, axis=%d%s));\n" % (idx(orank), red, ax, kw), P + [arr("y", odt, orank)])
            if not red.startswith("arg"):
                emit(ld + "    store(y, index=(0,), tile=expand_dims(%s(t), 0));\n" % red, P + [arr("y", odt, 1)])
                for at in ["atomic_add", "atomic_max", "atomic_min"]:
                    emit(ld + "    %s(y, (0,), %s(t));\n" % (at, red), P + [arr("y", odt, 1)])
        for sc in SCAN:
            for ax in range(r):
                for rev in ["false", "true"]:
                    emit(ld + "    store(y, index=%s, tile=%s(t, axis=%d, reverse=%s));\n" % (idx(r), sc, ax, rev), P + [arr("y", dt, r)])
        # shape ops
        emit(ld + "    store(y, index=(0,), tile=reshape(t, (-1,)));\n", P + [arr("y", dt, 1)])
        if r >= 2:
            emit(ld + "    store(y, index=%s, tile=transpose(t));\n" % idx(r), P + [arr("y", dt, r)])
            perm = list(range(r)); random.shuffle(perm)
            emit(ld + "    store(y, index=%s, tile=permute(t, %s));\n" % (idx(r), shp(tuple(perm))), P + [arr("y", dt, r)])
        for ax in range(r + 1):
            emit(ld + "    store(y, index=%s, tile=expand_dims(t, %d));\n" % (idx(r + 1), ax), P + [arr("y", dt, r + 1)])
        for ax in range(r):
            emit(ld + "    store(y, index=%s, tile=cat((t, t), %d));\n" % (idx(r), ax), P + [arr("y", dt, r)])
        bs = tuple(4 if e == 1 else e for e in s)
        emit(ld + "    store(y, index=%s, tile=broadcast_to(t, %s));\n" % (idx(r), shp(bs)), P + [arr("y", dt, r)])
        sub = tuple(max(1, e // 2) for e in s)
        emit(ld + "    store(y, index=%s, tile=extract(t, index=%s, shape=%s));\n" % (idx(r), shp(tuple(1 if e > 1 else 0 for e in s)), shp(sub)), P + [arr("y", dt, r)])
        # gather / scatter
        if r == 1:
            emit("    let i = arange(%d) * 3;\n    let g = gather(x, (i,));\n    scatter(y, (i,), g);\n" % s[0], P + [arr("y", dt, 1)])
            emit("    let i = arange(%d);\n    atomic_max(y, (i,), gather(x, (i,), padding=neg_inf));\n" % s[0], P + [arr("y", dt, 1)])
        # load variants
        for pad in ["zero", "nan", "pos_inf", "neg_inf"]:
            emit("    let t = load(x, index=%s, shape=%s, padding=%s, latency=3);\n    store(y, index=%s, tile=t);\n" % (idx(r), shp(s), pad, idx(r)), P + [arr("y", dt, r)])
        if r >= 2:
            o = shp(tuple(reversed(range(r))))
            emit("    let t = load(x, index=%s, shape=%s, order=%s);\n    store(y, index=%s, tile=t, order=%s);\n" % (idx(r), shp(s), o, idx(r), o), P + [arr("y", dt, r)])
        # loops with var
        emit("    var acc = zeros(%s, %s);\n    for i in range(n) { acc += load(x, index=%s, shape=%s); if i > 3 { break; } }\n    store(y, index=%s, tile=acc);\n" % (shp(s), dt, idx(r), shp(s), idx(r)), P + [arr("y", dt, r), "n: i32"])
        for w in [1, 2, 8, 16, 32]:
            emit(ld + "    store(y, index=%s, tile=cumsum(t, axis=0) + sum(t, axis=0, keepdims=true));\n" % idx(r), P + [arr("y", dt, r)], " with (num_warps = %d)" % w)
# mma
for a, c in [("f16", "f16"), ("f16", "f32"), ("bf16", "f32"), ("tf32", "f32"), ("f32", "f32"), ("i8", "i32")]:
    for M, N, K in [(16, 8, 16), (16, 16, 16), (32, 32, 32), (64, 64, 32), (1, 1, 1), (2, 4, 8), (16, 8, 8), (128, 128, 32), (8, 8, 8)]:
        for w in ["", " with (num_warps = 1)", " with (num_warps = 8)"]:
            ad = "f32" if a == "tf32" else a
            cv = "astype(" if a == "tf32" else ""
            A = "astype(load(a, index=(0, 0), shape=(%d, %d)), tf32)" % (M, K) if a == "tf32" else "load(a, index=(0, 0), shape=(%d, %d))" % (M, K)
            B = "astype(load(b, index=(0, 0), shape=(%d, %d)), tf32)" % (K, N) if a == "tf32" else "load(b, index=(0, 0), shape=(%d, %d))" % (K, N)
            emit("    var acc = zeros((%d, %d), %s);\n    for i in range(n) { acc = mma(%s, %s, acc); }\n    store(c, index=(0, 0), tile=acc);\n" % (M, N, c, A, B),
                 [arr("a", ad, 2), arr("b", ad, 2), arr("c", c, 2), "n: i32"], w)
            emit("    store(c, index=(0, 0, 0), tile=mma(load(a, index=(0, 0, 0), shape=(2, %d, %d)), load(b, index=(0, 0, 0), shape=(2, %d, %d)), zeros((2, %d, %d), %s)));\n" % (M, K, K, N, M, N, c),
                 [arr("a", ad, 3), arr("b", ad, 3), arr("c", c, 3)], w)
print(n)
