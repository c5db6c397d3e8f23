#!/usr/bin/env python3
"""gen_mma_loops.py OUT_DIR COUNT SEED: valid programs for the CUDA emitter's
mma loops, for fuzz_replay --nvrtc by hand (tests/fuzz/README.md).

Each program is one kernel: an mma loop whose A operand is a random
element-wise chain over a loaded matrix tile (s), a loaded row vector (vk),
a column vector loaded before the loop (um), a scalar, and a causal mask
made from arange (rows >= cols).  Tile sizes 16-128, operand dtypes
bf16 / f16 / tf32 / f32, 1-8 warps, pipeline depth (latency) 1-3 or the
default.  They reach the cp.async pipeline with register-read loads on it
or off it (tiles either side of its 16 KB bound), values made again in
their use's layout, and the whole-tile bounds tests of loads and stores.
"""
import os
import random
import sys


def expr(depth, names, mask="rows >= cols"):
    """A random element-wise chain over `names` (gen_mma_chains.py uses it too)."""
    if depth == 0 or random.random() < 0.3:
        return random.choice(names)
    k = random.random()
    a = expr(depth - 1, names, mask)
    b = expr(depth - 1, names, mask)
    if k < 0.25:
        return f"({a} * {b})"
    if k < 0.45:
        return f"({a} - {b})"
    if k < 0.6:
        return f"exp2(minimum({a}, 0.0))"
    if k < 0.75:
        return f"maximum({a}, {b})"
    if k < 0.9:
        return f"where({mask}, {a}, 0.0)"
    return f"({a} + 1.5)"


def program():
    bm = random.choice([16, 32, 64, 128])
    bk = random.choice([16, 32, 64, 128])
    bn = random.choice([16, 32, 64])
    op = random.choice(["bf16", "f16", "tf32", "f32"])
    adt = "f32" if op in ("tf32", "f32") else op
    warps = random.choice([1, 2, 4, 8])
    e = expr(random.randint(1, 4), ["s", "vk", "um", "scal"])
    lat = random.choice(["", ", latency=1", ", latency=3"])
    return f"""kernel k(w: f32[M, K], v: f32[K], u: f32[M], a: {adt}[K, N], y: f32[M, N], alpha: f32,
        const BM: i32 = {bm}, const BK: i32 = {bk}, const BN: i32 = {bn}) with (num_warps = {warps}) {{
    let rows = reshape(bid(0) * BM + arange(BM), (BM, 1));
    let um = reshape(load(u, index=(bid(0),), shape=(BM,)), (BM, 1));
    let scal = alpha * 2.0;
    var acc = zeros((BM, BN), f32);
    for kt in range(cdiv(w.shape[1], BK)) {{
        let s = load(w, index=(bid(0), kt), shape=(BM, BK){lat});
        let vk = reshape(load(v, index=(kt,), shape=(BK,)), (1, BK));
        let cols = reshape(kt * BK + arange(BK), (1, BK));
        let t = {e};
        let ak = load(a, index=(kt, bid(1)), shape=(BK, BN));
        acc = mma(broadcast_to(t, (BM, BK)).astype({op}), ak.astype({op}), acc);
    }}
    store(y, index=(bid(0), bid(1)), tile=acc);
}}
"""


def write_programs(doc, make, name):
    """OUT_DIR COUNT SEED from the command line: COUNT programs make(n) into
    OUT_DIR/name(n) (gen_mma_chains.py uses it too)."""
    if len(sys.argv) != 4:
        sys.exit(doc)
    out, count, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    random.seed(seed)
    os.makedirs(out, exist_ok=True)
    for n in range(count):
        with open(os.path.join(out, name(n)), "w") as f:
            f.write(make(n))


def main():
    write_programs(__doc__, lambda n: program(), lambda n: f"m{n:05d}.tile")


if __name__ == "__main__":
    main()
