#!/usr/bin/env python3
"""gen_random_programs.py OUT_DIR COUNT SEED: random tile programs, mostly
well typed: expression trees over one tile type (element-wise, reductions kept
as broadcasts, scans, casts, reshapes, mma), a mutable accumulator assigned in
loops and branches (its layout must settle), break/continue, num_warps hints.
    python3 tests/fuzz/gen_random_programs.py /tmp/rand 5000 7
    build/tests/fuzz/fuzz_replay --nvrtc /tmp/rand"""
import os, random, sys
out = sys.argv[1]; N = int(sys.argv[2]); random.seed(int(sys.argv[3]))
os.makedirs(out, exist_ok=True)
DT = "i8 i16 i32 i64 u8 u16 u32 u64 f16 bf16 f32 f64".split()
FL = ["f16", "bf16", "f32", "f64"]
def shp(s): return "(" + ", ".join(map(str, s)) + ("," if len(s) == 1 else "") + ")"
class G:
    def __init__(s):
        s.dt = random.choice(DT + ["f32"] * 4)
        s.shape = random.choice([(16,), (64,), (8, 16), (32, 32), (2, 8, 4), (1, 32), (4, 1), (128, 8), (1,)])
        s.r = len(s.shape); s.lines = []; s.vars = []; s.n = 0; s.depth = 0
    def fresh(s): s.n += 1; return "v%d" % s.n
    def leaf(s):
        c = random.random()
        if s.vars and c < 0.5: return random.choice(s.vars)
        if c < 0.7: return "load(x, index=%s, shape=%s, padding=%s)" % (s.idx(), shp(s.shape), random.choice(["zero", "neg_inf", "nan"]))
        if c < 0.8: return "full(%s, %s, %s)" % (shp(s.shape), random.choice(["1", "0", "3", "-2"]), s.dt)
        if c < 0.9: return "astype(reshape(arange(%d), %s), %s)" % (prod(s.shape), shp(s.shape), s.dt)
        return "astype(n, %s)" % s.dt
    def idx(s): return shp(tuple(random.choice(["bid(0)", "0", "1", "i", "n"]) if s.depth and d == 0 else random.choice(["bid(0)", "0", "bid(1)"]) for d in range(s.r)))
    def expr(s, d=0):
        if d > 3 or random.random() < 0.3: return s.leaf()
        c = random.randrange(12)
        a = s.expr(d + 1)
        fl = s.dt in FL
        if c == 0: return "(%s %s %s)" % (a, random.choice("+-*/%" if not fl else "+-*/"), s.expr(d + 1))
        if c == 1 and fl: return "%s(%s)" % (random.choice("exp exp2 log sqrt abs floor sin tanh sigmoid rsqrt cos ceil log2".split()), a)
        if c == 1: return "(%s %s %s)" % (a, random.choice(["&", "|", "^", "<<", ">>"]), s.expr(d + 1))
        if c == 2: return "where(%s %s %s, %s, %s)" % (a, random.choice(["<", ">", "==", "!="]), s.expr(d + 1), s.expr(d + 1), s.expr(d + 1))
        if c == 3: return "%s(%s, %s)" % (random.choice(["maximum", "minimum"]), a, s.expr(d + 1))
        if c == 4 and s.r >= 1:
            ax = random.randrange(s.r)
            return "%s(%s, axis=%d, keepdims=true)" % (random.choice(["sum", "max", "min"]), a, ax)
        if c == 5 and s.r >= 1:
            return "%s(%s, axis=%d, reverse=%s)" % (random.choice(["cumsum", "cumsum", "cumprod"]), a, random.randrange(s.r), random.choice(["true", "false"]))
        if c == 6 and s.r == 2 and s.shape[0] == s.shape[1]: return "transpose(%s)" % a
        if c == 7: return "reshape(reshape(%s, (-1,)), %s)" % (a, shp(s.shape))
        if c == 8: return "astype(astype(%s, %s), %s)" % (a, random.choice(DT + ["bool"]), s.dt)
        if c == 9 and s.r >= 1:
            ax = random.randrange(s.r)
            return "broadcast_to(expand_dims(%s(%s, axis=%d), %d), %s)" % (random.choice(["sum", "max", "min", "prod"]), a, ax, ax, shp(s.shape))
        if c == 10 and s.r == 2 and s.dt in ("f16", "bf16", "f32", "i8") and s.shape[0] == s.shape[1]:
            acc = {"f16": "f32", "bf16": "f32", "f32": "f32", "i8": "i32"}[s.dt]
            return "astype(mma(%s, %s, zeros(%s, %s)), %s)" % (a, s.expr(d + 1), shp(s.shape), acc, s.dt)
        if c == 11: return "(%s * item(extract(%s, index=%s, shape=%s)))" % (a, s.expr(d + 1), shp((0,) * s.r), shp((1,) * s.r))
        return a
    def stmt(s, ind):
        c = random.randrange(7)
        p = "    " * ind
        if c <= 1:
            v = s.fresh(); s.lines.append("%slet %s = %s;" % (p, v, s.expr())); s.vars.append(v)
        elif c == 2 and s.depth < 2:
            s.depth += 1
            s.lines.append("%sfor i in range(%s) {" % (p, random.choice(["n", "4", "0, n, 2", "bid(0)"])))
            saved = list(s.vars)
            for _ in range(random.randrange(1, 4)): s.stmt(ind + 1)
            if random.random() < 0.3: s.lines.append("%s    if i > 2 { %s; }" % (p, random.choice(["break", "continue"])))
            s.vars = saved; s.depth -= 1
            s.lines.append(p + "}")
        elif c == 3 and s.depth < 2:
            s.depth += 1
            s.lines.append("%sif n > %d {" % (p, random.randrange(4)))
            saved = list(s.vars)
            s.stmt(ind + 1)
            s.vars = saved
            s.lines.append(p + "} else {"); s.stmt(ind + 1); s.vars = saved
            s.depth -= 1
            s.lines.append(p + "}")
        elif c == 4:
            s.lines.append("%sacc %s= %s;" % (p, random.choice(["", "+", "*", "-"]), s.expr()))
        elif c == 5:
            s.lines.append("%sstore(y, index=%s, tile=%s);" % (p, s.idx(), s.expr()))
        else:
            s.lines.append("%sstore(y, index=%s, tile=acc);" % (p, s.idx()))
    def prog(s):
        s.lines.append("    var acc = zeros(%s, %s);" % (shp(s.shape), s.dt))
        for _ in range(random.randrange(2, 7)): s.stmt(1)
        s.lines.append("    store(y, index=%s, tile=acc);" % s.idx())
        dims = ", ".join("_" for _ in range(s.r))
        hint = random.choice(["", "", " with (num_warps = 1)", " with (num_warps = 8)", " with (num_warps = 2, occupancy = 2)"])
        return "kernel k(x: %s[%s], y: %s[%s], n: i32)%s {\n%s\n}\n" % (s.dt, dims, s.dt, dims, hint, "\n".join(s.lines))
def prod(t):
    r = 1
    for e in t: r *= e
    return r
for i in range(N):
    open(os.path.join(out, "r%05d.tile" % i), "w").write(G().prog())
