#!/usr/bin/env python3
"""gen_hopper.py OUT_DIR COUNT SEED: valid programs with their launches, for
running on the GPU or the emu backend against the interpreter (gpu_check),
aimed at the code an H200 runs (sm_90a: wgmma, TMA copies, mbarriers).

Each program is one kernel with `// gpu:` lines (tests/gpu/gpu_check.c) that
give its grid, constants and array shapes, edges included.  Four kinds,
taken in turn (so that a few programs have every kind):
  - matmul: A stored [M][K] or [K][M], B [K][N] or [N][K], 16-bit or tf32
    operands (cast from f32 arrays or stored so), f32 accumulation, 64- or
    128-row tiles, 8-256 columns, k tiles of 16-64 (8-64 for tf32), 4 or 8
    warps, now and then batched over a head dimension of the arrays (leading,
    or between rows and columns: strided rows, as Mamba-2's), a pipeline
    depth (latency) or the default, an occupancy hint or none, now and then
    an iteration skipped (`continue`) or a product outside the loop; then an
    epilogue (a bias row, a scalar, a random element-wise chain) stored as
    f32, bf16 or f16 (16-bit tiles by TMA where the emitter can);
  - chain: an attention-like loop, one product's result through a random
    element-wise chain the next one's A operand (A from registers), B stored
    [K][N] or [N][K];
  - staged: a product whose B the kernel computed (another product's
    result, transposed), as Mamba-2's C·stateᵀ;
  - scan: a state carried through the loop in registers and four products
    a step, as Mamba-2's scan (scores C·Bᵀ masked causally, their weights
    times x with A from registers, C·stateᵀ with the state staged, the
    state's xᵀ·B), the output tile stored every step (16-bit: by TMA where
    the emitter can).
The same programs are valid for mma.sync (any other target): gpu_check
checks whatever the backend emits.  tests/fuzz/README.md has the commands.
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_mma_loops import expr as chain, write_programs  # noqa: E402  (the same chains and driver)

# Relative L2 tolerances.  Both sides round the operands alike (the
# interpreter's tf32 is cvt.rn's), so they differ only by the order of the
# sums, and by a rounding that flips where a value is cast to 16 bits
# (largest seen in 1,200 launches: 3e-7 for f32 results of 16-bit or tf32
# operands, 3e-4 with a 16-bit cast on the way); one wrong element of a
# 256 x 512 output is 3e-3 of it.
TOL_EXACT, TOL_CAST = 1e-5, 2e-3


def cdiv(a, b):
    return -(-a // b)


def edge(tile, blocks):
    """An extent over `blocks` tiles, mostly ragged at the end."""
    n = tile * blocks
    return n if random.random() < 0.3 else n - random.randint(1, tile - 1)


def operand(name, stored_t, op, arr_dt, shape_rc, index, lat, head=None):
    """Load expression of an mma operand tile of shape shape_rc, stored as it
    is or transposed, cast to the operand dtype where the array's is another.
    head: None for a 2-D array; 0 for a leading head dimension ([H, r, c],
    indexed by bid(2)); 1 for one between the rows and columns ([r, H, c]:
    rows strided, as Mamba-2's x[b, t, h, p])."""
    (r, c), (ri, ci) = (shape_rc[::-1], index[::-1]) if stored_t else (shape_rc, index)
    if head is None:
        e = f"load({name}, index=({ri}, {ci}), shape=({r}, {c}){lat})"
    elif head == 0:
        e = f"reshape(load({name}, index=(bid(2), {ri}, {ci}), shape=(1, {r}, {c}){lat}), ({r}, {c}))"
    else:
        e = f"reshape(load({name}, index=({ri}, bid(2), {ci}), shape=({r}, 1, {c}){lat}), ({r}, {c}))"
    if stored_t:
        e = f"transpose({e})"
    return e if arr_dt == op else f"{e}.astype({op})"


def dims(rows, cols, stored_t, head, H):
    """The array's extents, as declared (names) or launched (numbers)."""
    r, c = (cols, rows) if stored_t else (rows, cols)
    return [r, c] if head is None else [H, r, c] if head == 0 else [r, H, c]


def epilogue(acc, depth):
    """The accumulator plus 0.3 times a random element-wise chain over it, a
    bias row and a scalar: no chain cancels it exactly (the scalars are
    dyadic, 0.3 is not), so the product is always checked."""
    return f"({acc} + 0.3 * ({chain(random.randint(0, depth), [acc, 'bv', 'scal'], 'rows >= cols')}))"


def matmul(n):
    bm = random.choice([64, 128])
    bn = random.choice([8, 16, 32, 64, 128, 256])
    op = random.choice(["bf16", "f16", "tf32"])
    bk = random.choice([8, 16, 32, 64]) if op == "tf32" else random.choice([16, 32, 64])
    warps = random.choice([4, 8])
    occ = random.choice(["", "", ", occupancy = 1", ", occupancy = 2"])   # room for TMA stores' buffers
    a_t, b_t = random.random() < 0.3, random.random() < 0.5
    adt = random.choice([op, "f32"]) if op != "tf32" else "f32"
    bdt = random.choice([op, "f32"]) if op != "tf32" else "f32"
    ydt = random.choice(["f32", "f32", "bf16", "f16"])
    lat = random.choice(["", "", ", latency=1", ", latency=2", ", latency=3"])
    skip = random.random() < 0.15
    outside = random.random() < 0.1
    gm, gn, gk = random.randint(1, 2), random.randint(1, 2), random.randint(1, 4)
    M, N, K = edge(bm, gm), edge(bn, gn), edge(bk, gk)
    # batched (a grid dimension over heads): each array with a head dimension, leading or between
    batched = random.random() < 0.35
    ha, hb = (random.choice([0, 1]), random.choice([0, 1])) if batched else (None, None)
    H = random.randint(1, 3) if batched else 1
    an, bn_ = ("at" if a_t else "a"), ("bt" if b_t else "b")
    a_decl = f"{an}: {adt}[{', '.join(dims('M', 'K', a_t, ha, 'H'))}]"
    b_decl = f"{bn_}: {bdt}[{', '.join(dims('K', 'N', b_t, hb, 'H'))}]"
    ta = operand(an, a_t, op, adt, ("BM", "BK"), ("bid(0)", "kt"), lat, ha)
    tb = operand(bn_, b_t, op, bdt, ("BK", "BN"), ("kt", "bid(1)"), lat, hb)
    # (an iteration skipped: one of at least two, so that the product is checked)
    skip_line = f"        if kt == {random.randint(0, gk - 1)} {{ continue; }}\n" if skip and gk > 1 else ""
    extra = ""
    if outside:   # one more product after the loop, on the first k tile
        ta0 = operand(an, a_t, op, adt, ("BM", "BK"), ("bid(0)", "0"), "", ha)
        tb0 = operand(bn_, b_t, op, bdt, ("BK", "BN"), ("0", "bid(1)"), "", hb)
        extra = f"    acc = mma({ta0}, {tb0}, acc);\n"
    out = epilogue("acc", 3 if ydt != "f16" else 1)   # (f16's range: the chain's powers of acc kept low)
    a_arr = f"{an}=[{','.join(map(str, dims(M, K, a_t, ha, H)))}]"
    b_arr = f"{bn_}=[{','.join(map(str, dims(K, N, b_t, hb, H)))}]"
    y_decl, y_arr = (f"y: {ydt}[H, M, N]", f"y=[{H},{M},{N}]") if batched else (f"y: {ydt}[M, N]", f"y=[{M},{N}]")
    y_store = ("store(y, index=(bid(2), bid(0), bid(1)), tile=reshape(({out}).astype({ydt}), (1, BM, BN)));" if batched
               else "store(y, index=(bid(0), bid(1)), tile=({out}).astype({ydt}));").format(out=out, ydt=ydt)
    tol = TOL_EXACT if ydt == "f32" else TOL_CAST
    launch = (f"// gpu: kernel=mm grid={cdiv(M, bm)},{cdiv(N, bn)},{H} -DBM={bm} -DBN={bn} -DBK={bk} "
              f"{a_arr} {b_arr} bias=[{N}] {y_arr} alpha={random.choice(['0.5', '-1.25', '2.0'])} tol={tol:g}")
    return f"""// generated by gen_hopper.py (program {n}: matmul)
{launch}
kernel mm({a_decl}, {b_decl}, bias: f32[N], {y_decl}, alpha: f32,
          const BM: i32, const BN: i32, const BK: i32) with (num_warps = {warps}{occ}) {{
    var acc = zeros((BM, BN), f32);
    for kt in range(cdiv(K, BK)) {{
{skip_line}        acc = mma({ta}, {tb}, acc);
    }}
{extra}    let rows = reshape(bid(0) * BM + arange(BM), (BM, 1));
    let cols = reshape(bid(1) * BN + arange(BN), (1, BN));
    let bv = reshape(load(bias, index=(bid(1),), shape=(BN,)), (1, BN));
    let scal = alpha * 0.5;
    {y_store}
}}
"""


def chained(n):
    bm = random.choice([64, 128])
    bn = random.choice([16, 32, 64])
    bd = random.choice([16, 32, 64])
    warps = random.choice([4, 8])
    op = random.choice(["bf16", "f16", "tf32"])
    dt = random.choice(["f32", op]) if op != "tf32" else "f32"
    v_t = random.random() < 0.4
    lat = random.choice(["", ", latency=2"])
    s_chain = f"s * ({chain(2, ['s', 's', 'cs', '0.5'], 'rows >= cols')})"
    v_load = operand("vt" if v_t else "v", v_t, op, dt, (str(bn), str(bd)), ("j", "0"), lat)
    M, N, D = edge(bm, random.randint(1, 2)), random.randint(bn // 2, 3 * bn), bd
    launch = (f"// gpu: kernel=chains grid={cdiv(M, bm)},1 q=[{M},{D}] k=[{N},{D}] "
              f"{'vt' if v_t else 'v'}={'[%d,%d]' % (D, N) if v_t else '[%d,%d]' % (N, D)} c=[{N}] o=[{M},{D}] "
              f"tol={TOL_CAST:g}")
    v_decl = f"vt: {dt}[D, N]" if v_t else f"v: {dt}[N, D]"
    tk = operand("k", True, op, dt, (str(bd), str(bn)), ("0", "j"), lat)
    return f"""// generated by gen_hopper.py (program {n}: chain)
{launch}
kernel chains(q: {dt}[M, D], k: {dt}[N, D], {v_decl}, c: f32[N], o: f32[M, D]) with (num_warps = {warps}) {{
    let tq = (load(q, index=(bid(0), 0), shape=({bm}, {bd})).astype(f32) * 0.25).astype({op});
    let rows = reshape(bid(0) * {bm} + arange({bm}), ({bm}, 1));
    var acc = zeros(({bm}, {bd}), f32);
    for j in range(cdiv(N, {bn})) {{
        let cols = reshape(j * {bn} + arange({bn}), (1, {bn}));
        let s = mma(tq, {tk}, zeros(({bm}, {bn}), f32));
        let cs = reshape(load(c, index=(j,), shape=({bn},)), (1, {bn}));
        acc = mma(({s_chain}).astype({op}), {v_load}, acc);
    }}
    store(o, index=(bid(0), 0), tile=acc);
}}
"""


def staged(n):
    bm = random.choice([64, 128])
    bs = random.choice([16, 32, 64])      # the computed B's rows: K of the second product
    bn = random.choice([16, 32, 64])
    bk = random.choice([16, 32])
    warps = random.choice([4, 8])
    op = random.choice(["bf16", "tf32"])
    M, S = edge(bm, random.randint(1, 2)), bs
    N, K = bn, random.randint(bk, 4 * bk)
    launch = (f"// gpu: kernel=staged grid={cdiv(M, bm)},1 c=[{M},{S}] x=[{K},{S}] b=[{K},{N}] "
              f"y=[{M},{N}] tol={TOL_CAST:g}")
    return f"""// generated by gen_hopper.py (program {n}: staged)
{launch}
kernel staged(c: f32[M, S], x: f32[K, S], b: f32[K, N], y: f32[M, N]) with (num_warps = {warps}) {{
    var h = zeros(({bn}, {bs}), f32);
    for kt in range(cdiv(K, {bk})) {{
        let tx = load(x, index=(kt, 0), shape=({bk}, {bs}));
        let tb = load(b, index=(kt, 0), shape=({bk}, {bn}));
        h = mma(transpose(tb).astype({op}), tx.astype({op}), h);
    }}
    let tc = load(c, index=(bid(0), 0), shape=({bm}, {bs}));
    let out = mma(tc.astype({op}), transpose(h * 0.125).astype({op}), zeros(({bm}, {bn}), f32));
    store(y, index=(bid(0), 0), tile=out);
}}
"""


def scan(n):
    step = random.choice([16, 32, 64])
    bp = random.choice([32, 64])
    bn = random.choice([16, 32, 64])
    warps = 4 if step < 64 else random.choice([4, 8])
    op = random.choice(["bf16", "bf16", "tf32"])
    dt, ydt = ("bf16", random.choice(["bf16", "f32"])) if op == "bf16" else ("f32", "f32")
    occ = random.choice(["", ", occupancy = 2"])
    lat = random.choice(["", ", latency=1"])
    T, P = random.randint(step, 4 * step), bp * random.randint(1, 2)
    cast = "" if dt == op else f".astype({op})"
    launch = (f"// gpu: kernel=scan grid={P // bp},1 x=[{T},{P}] bm=[{T},{bn}] cm=[{T},{bn}] y=[{T},{P}] "
              f"tol={TOL_CAST:g}")
    return f"""// generated by gen_hopper.py (program {n}: scan)
{launch}
kernel scan(x: {dt}[T, P], bm: {dt}[T, N], cm: {dt}[T, N], y: {ydt}[T, P]) with (num_warps = {warps}{occ}) {{
    var h = zeros(({bp}, {bn}), f32);
    let rows = reshape(arange({step}), ({step}, 1));
    let cols = reshape(arange({step}), (1, {step}));
    for t in range(cdiv(T, {step})) {{
        let xk = load(x, index=(t, bid(0)), shape=({step}, {bp}){lat}){cast};
        let bk = load(bm, index=(t, 0), shape=({step}, {bn}){lat}){cast};
        let ck = load(cm, index=(t, 0), shape=({step}, {bn}){lat}){cast};
        let s = mma(ck, transpose(bk), zeros(({step}, {step}), f32));
        let w = where(rows >= cols, s * 0.25, 0.0).astype({op});
        let yk = mma(w, xk, mma(ck, transpose(h).astype({op}), zeros(({step}, {bp}), f32)));
        store(y, index=(t, bid(0)), tile=yk.astype({ydt}));
        h = mma(transpose(xk), bk, h * 0.5);
    }}
}}
"""


KINDS = [matmul, chained, matmul, staged, matmul, scan, matmul, chained]


def program(n):
    return KINDS[n % len(KINDS)](n)


def main():
    write_programs(__doc__, program, lambda n: f"hopper_{n:04d}.tile")


if __name__ == "__main__":
    main()
