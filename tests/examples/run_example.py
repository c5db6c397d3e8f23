#!/usr/bin/python3
"""Runs the example kernels of examples/*.tile through `tilec run` and checks
their outputs against NumPy.

Each case writes random inputs as .npy files into its own folder under the
work directory, runs one kernel on the CPU backend at array extents that are
not multiples of the tile, reads back every array the kernel writes and
compares it with a float64 NumPy computation of the same thing.

    run_example.py --tilec PATH --examples DIR --work DIR CASE...
    run_example.py --list            names of all cases, one a line

Exit status: 0 all passed, 1 a case failed, 77 NumPy is missing (CTest then
marks the test skipped).
"""
import argparse
import os
import subprocess
import sys

SKIP = 77

try:
    import numpy as np
except ImportError:          # --list must work without NumPy (CMake calls it)
    np = None


# ---- numerics of the narrow dtypes, as the language defines them -----------

def round_bf16(a):
    """float32 -> nearest bf16 (ties to even), returned as float32."""
    u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return u.astype(np.uint32).view(np.float32)


def round_tf32(a):
    """float32 -> tf32 as cvt.rn: 10 mantissa bits, ties to even."""
    a = np.asarray(a, np.float32)
    u = a.view(np.uint32).astype(np.uint64)
    u = (u + 0xFFF + ((u >> 13) & 1)) & 0xFFFFE000
    return np.where(np.isfinite(a), u.astype(np.uint32).view(np.float32), a)


def cdiv(a, b):
    return -(-a // b)


# Relative tolerance by the dtype of the result: relative L2 error of the
# whole array, and per element against the largest magnitude of the array.
TOL = {"f32": 1e-5, "tf32": 1e-5, "f16": 2e-3, "bf16": 1e-2, "exact": 0.0}


class Case:
    """One kernel run: inputs, the expected outputs and their tolerances."""

    def __init__(self, file, kernel, grid, args, expect, defines=(), tol=None):
        self.file = file              # examples/<file>
        self.kernel = kernel
        self.grid = grid              # tuple of 1 to 3 ints
        self.args = args              # name -> ndarray | ("new", dtype, shape) | scalar str
        self.expect = expect          # name -> (expected ndarray, tolerance key)
        self.defines = list(defines)  # "NAME=VALUE" for -D


def new(dtype, *shape):
    return ("new", dtype, shape)


# ---- the cases -----------------------------------------------------------------
# Each is a function of a seeded Generator returning a Case; the extents are
# chosen so that no array is a whole number of tiles.

def case_vector_add(rng):
    n = 1000
    x, y = rng.standard_normal(n, np.float32), rng.standard_normal(n, np.float32)
    return Case("vector_add.tile", "vector_add", (cdiv(n, 256),),
                {"x": x, "y": y, "z": new("f32", n)},
                {"z": (x.astype(np.float64) + y, "f32")})


def case_vector_add_small_block(rng):
    n = 333
    x, y = rng.standard_normal(n, np.float32), rng.standard_normal(n, np.float32)
    return Case("vector_add.tile", "vector_add", (cdiv(n, 64),),
                {"x": x, "y": y, "z": new("f32", n)},
                {"z": (x.astype(np.float64) + y, "f32")}, defines=["BLOCK=64"])


def case_axpy(rng):
    n = 777
    x, y = rng.standard_normal(n, np.float32), rng.standard_normal(n, np.float32)
    return Case("vector_add.tile", "axpy", (cdiv(n, 256),),
                {"alpha": "-0.75", "x": x, "y": y},
                {"y": (-0.75 * x.astype(np.float64) + y, "f32")})


def case_relu_scale(rng):
    n = 1001
    x = rng.standard_normal(n, np.float32)
    xb = round_bf16(x).astype(np.float64)
    return Case("vector_add.tile", "relu_scale", (3,),          # fewer blocks than tiles
                {"x": x, "out": new("bf16", n)},
                {"out": (np.maximum(xb, 0) * 2, "bf16")})


def case_relu_scale_f16(rng):                                    # the dtype constant T
    n = 700
    x = rng.standard_normal(n, np.float32).astype(np.float16)
    return Case("vector_add.tile", "relu_scale", (2,),
                {"x": x, "out": new("f16", n)},
                {"out": (np.maximum(x.astype(np.float64), 0) * 2, "f16")}, defines=["T=f16"])


def softmax_ref(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def case_softmax_row(rng):
    m, n = 7, 300
    x = (5 * rng.standard_normal((m, n))).astype(np.float32)
    return Case("softmax.tile", "softmax_row", (m,), {"x": x, "out": new("f32", m, n)},
                {"out": (softmax_ref(x), "f32")}, defines=["BLOCK_N=512"])


def case_softmax_looped(rng):
    m, n = 5, 300
    x = (20 * rng.standard_normal((m, n))).astype(np.float32)
    x[1, 250] = 90.0          # a maximum in the last tile forces a rescale
    return Case("softmax.tile", "softmax_looped", (m,), {"x": x, "out": new("f32", m, n)},
                {"out": (softmax_ref(x), "f32")})


def layernorm_ref(x, w, b, eps):
    x = x.astype(np.float64)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def layernorm_case(rng, kernel, m, n, defines):
    x = (3 + 2 * rng.standard_normal((m, n))).astype(np.float32)
    w = rng.standard_normal(n, np.float32)
    b = rng.standard_normal(n, np.float32)
    return Case("layernorm.tile", kernel, (m,),
                {"x": x, "weight": w, "bias": b, "out": new("f32", m, n), "eps": "1e-5"},
                {"out": (layernorm_ref(x, w, b, 1e-5), "f32")}, defines=defines)


def case_layernorm(rng):
    return layernorm_case(rng, "layernorm", 6, 200, ["BLOCK_N=256"])


def case_layernorm_looped(rng):
    return layernorm_case(rng, "layernorm_looped", 5, 300, ["BLOCK_N=128"])


def matmul_case(rng, kernel, m, k, n, bm, bn, in_dtype, out_dtype, tol, names=("a", "b")):
    a = rng.standard_normal((m, k), np.float32)
    b = rng.standard_normal((k, n), np.float32)
    if in_dtype == "bf16":
        ar, br = round_bf16(a), round_bf16(b)
    elif in_dtype == "tf32":
        ar, br = round_tf32(a), round_tf32(b)
    elif in_dtype == "f16":
        a, b = a.astype(np.float16), b.astype(np.float16)
        ar, br = a, b
    else:
        ar, br = a, b
    c = ar.astype(np.float64) @ br.astype(np.float64)
    return Case("matmul.tile", kernel, (cdiv(m, bm), cdiv(n, bn)),
                {names[0]: a, names[1]: b, "c": new(out_dtype, m, n)}, {"c": (c, tol)})


def case_matmul_f32(rng):
    return matmul_case(rng, "matmul_f32", 70, 50, 45, 32, 32, "f32", "f32", "f32")


def case_matmul_f32_tiles64(rng):
    c = matmul_case(rng, "matmul_f32", 100, 90, 70, 64, 64, "f32", "f32", "f32")
    c.defines = ["BM=64", "BN=64", "BK=32"]
    return c


def case_matmul_tf32(rng):
    return matmul_case(rng, "matmul_tf32", 70, 50, 45, 32, 32, "tf32", "f32", "tf32")


def case_matmul_tf32_grouped(rng):
    # blocks ordered in groups of 3 tile rows (tile_of): 7 rows, the last group of 1
    c = matmul_case(rng, "matmul_tf32", 200, 50, 150, 32, 32, "tf32", "f32", "tf32")
    c.defines = ["GROUP_M=3"]
    return c


def case_matmul_bf16_grouped_wide(rng):
    # a group larger than the grid: one group of all 4 tile rows
    c = matmul_case(rng, "matmul_bf16", 100, 70, 90, 32, 32, "bf16", "f32", "f32")
    c.defines = ["GROUP_M=1000000000"]
    return c


def case_matmul_bf16(rng):
    return matmul_case(rng, "matmul_bf16", 40, 70, 33, 32, 32, "bf16", "f32", "f32")


def case_matmul_f16(rng):
    return matmul_case(rng, "matmul_f16", 40, 70, 33, 32, 32, "f16", "f16", "f16")


def case_bmm_f32(rng):
    nb, m, k, n = 3, 20, 35, 18
    a = rng.standard_normal((nb, m, k), np.float32)
    b = rng.standard_normal((nb, k, n), np.float32)
    return Case("matmul.tile", "bmm_f32", (cdiv(m, 16), cdiv(n, 16), nb),
                {"a": a, "b": b, "c": new("f32", nb, m, n)},
                {"c": (a.astype(np.float64) @ b, "f32")})


def case_matmul_nt(rng):
    m, n, k = 40, 30, 100
    a = rng.standard_normal((m, k), np.float32)
    bt = rng.standard_normal((n, k), np.float32)
    return Case("matmul.tile", "matmul_nt", (cdiv(m, 16), cdiv(n, 16)),
                {"a": a, "bt": bt, "c": new("f32", m, n)},
                {"c": (a.astype(np.float64) @ bt.T, "f32")})


def transpose_case(rng, kernel, grid_of):
    m, n = 50, 70
    x = rng.standard_normal((m, n), np.float32)
    return Case("transpose.tile", kernel, grid_of(m, n), {"x": x, "y": new("f32", n, m)},
                {"y": (x.T.astype(np.float64), "exact")})


def case_transpose_load_order(rng):
    return transpose_case(rng, "transpose_load_order", lambda m, n: (cdiv(n, 32), cdiv(m, 32)))


def case_transpose_permute(rng):
    return transpose_case(rng, "transpose_permute", lambda m, n: (cdiv(m, 32), cdiv(n, 16)))


def case_transpose_store_order(rng):
    return transpose_case(rng, "transpose_store_order", lambda m, n: (cdiv(m, 16), cdiv(n, 32)))


def case_batch_transpose(rng):
    nb, m, n = 2, 20, 33
    x = rng.integers(-1000, 1000, (nb, m, n), dtype=np.int32)
    return Case("transpose.tile", "batch_transpose", (cdiv(m, 16), cdiv(n, 16), nb),
                {"x": x, "y": new("i32", nb, n, m)},
                {"y": (np.swapaxes(x, 1, 2), "exact")})


def scan_case(rng, kernel, ref, values):
    m, n = 10, 150
    x = values(rng, (m, n)).astype(np.float32)
    return Case("scans.tile", kernel, (cdiv(m, 4),), {"x": x, "y": new("f32", m, n)},
                {"y": (ref(x.astype(np.float64)), "f32")})


def normal(rng, shape):
    return rng.standard_normal(shape)


def near_one(rng, shape):
    return rng.uniform(0.9, 1.1, shape)


def case_cumsum_rows(rng):
    return scan_case(rng, "cumsum_rows", lambda x: np.cumsum(x, axis=1), normal)


def case_cumsum_rows_reverse(rng):
    return scan_case(rng, "cumsum_rows_reverse",
                     lambda x: np.cumsum(x[:, ::-1], axis=1)[:, ::-1], normal)


def case_cumprod_rows(rng):
    return scan_case(rng, "cumprod_rows", lambda x: np.cumprod(x, axis=1), near_one)


def case_cumprod_rows_reverse(rng):
    return scan_case(rng, "cumprod_rows_reverse",
                     lambda x: np.cumprod(x[:, ::-1], axis=1)[:, ::-1], near_one)


def case_count_positive_cols(rng):
    m, n = 50, 40
    x = rng.integers(-5, 5, (m, n), dtype=np.int32)
    return Case("scans.tile", "count_positive_cols", (cdiv(n, 16),),
                {"x": x, "y": new("i32", m, n)},
                {"y": (np.cumsum(x > 0, axis=0).astype(np.int32), "exact")})


def case_sum_all(rng):
    m, n = 50, 70
    x = rng.uniform(0, 1, (m, n)).astype(np.float32)
    return Case("reductions.tile", "sum_all", (cdiv(m, 32), cdiv(n, 32)),
                {"x": x, "total": new("f32", 1)},
                {"total": (np.array([x.astype(np.float64).sum()]), "f32")})


def case_column_sums(rng):
    m, n = 40, 70
    x = rng.uniform(0, 1, (m, n)).astype(np.float32)
    return Case("reductions.tile", "column_sums", (cdiv(m, 16), cdiv(n, 32)),
                {"x": x, "colsum": new("f32", n)},
                {"colsum": (x.astype(np.float64).sum(axis=0), "f32")})


def case_histogram(rng):
    n, nb = 1000, 10
    bins = rng.integers(-2, nb + 2, n, dtype=np.int32)   # some outside [0, NB)
    inside = bins[(bins >= 0) & (bins < nb)]
    return Case("reductions.tile", "histogram", (cdiv(n, 256),),
                {"bins": bins, "hist": new("i32", nb)},
                {"hist": (np.bincount(inside, minlength=nb).astype(np.int32), "exact")})


def case_row_argmax(rng):
    m, n = 20, 100
    x = rng.standard_normal((m, n), np.float32)
    x[3, 7] = x[3, 60] = 10.0           # a tie: the first column wins
    x[4, 99] = 10.0                     # the last real column
    x[5, :] = -3.0                      # all equal
    return Case("reductions.tile", "row_argmax", (cdiv(m, 8),),
                {"x": x, "rowmax": new("f32", m), "rowarg": new("i32", m)},
                {"rowmax": (x.max(axis=1), "exact"),
                 "rowarg": (x.argmax(axis=1).astype(np.int32), "exact")})


def case_max_all(rng):
    n = 1000
    x = rng.standard_normal(n, np.float32)
    x[n - 3] = 7.5
    return Case("reductions.tile", "max_all", (cdiv(n, 128),),
                {"x": x, "gmax": x[:1].copy()},
                {"gmax": (np.array([x.max()]), "exact")})


def case_embedding(rng):
    t, v, d = 37, 20, 50
    ids = rng.integers(-1, v + 2, t, dtype=np.int32)     # a few out of range
    table = rng.standard_normal((v, d), np.float32)
    ok = (ids >= 0) & (ids < v)
    out = np.zeros((t, d))
    out[ok] = table[ids[ok]]
    return Case("gather.tile", "embedding", (cdiv(t, 16), cdiv(d, 32)),
                {"ids": ids, "table": table, "out": new("f32", t, d)},
                {"out": (out, "exact")})


def case_scatter_rows(rng):
    t, d, r = 37, 50, 45
    dest = rng.permutation(r)[:t].astype(np.int32)
    dest[5], dest[11] = -4, r + 3                         # dropped rows
    src = rng.standard_normal((t, d), np.float32)
    out = np.zeros((r, d))
    ok = (dest >= 0) & (dest < r)
    out[dest[ok]] = src[ok]
    return Case("gather.tile", "scatter_rows", (cdiv(t, 16), cdiv(d, 32)),
                {"dest": dest, "src": src, "out": new("f32", r, d)},
                {"out": (out, "exact")})


def case_reverse_rows(rng):
    m, n = 5, 150
    x = rng.standard_normal((m, n), np.float32)
    return Case("gather.tile", "reverse_rows", (m, cdiv(n, 64)),
                {"x": x, "y": new("f32", m, n)}, {"y": (x[:, ::-1], "exact")})


def gelu_ref(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


def activations_case(rng, kind, kind_ref):
    n = 1000
    x = (4 * rng.standard_normal(n)).astype(np.float32)
    x[:4] = [25.0, -25.0, 0.0, 19.5]
    xd = x.astype(np.float64)
    outs = {name: new("f32", n) for name in ("y_silu", "y_gelu", "y_softplus", "y_kind")}
    return Case("activations.tile", "activations", (cdiv(n, 256),), dict(x=x, **outs),
                {"y_silu": (xd / (1 + np.exp(-xd)), "f32"),
                 "y_gelu": (gelu_ref(xd), "f32"),
                 "y_softplus": (np.where(xd > 20, xd, np.log1p(np.exp(xd))), "f32"),
                 "y_kind": (kind_ref(xd), "f32")}, defines=["KIND=%d" % kind])


def case_activations_relu(rng):
    return activations_case(rng, 0, lambda x: np.maximum(x, 0))


def case_activations_elu(rng):
    return activations_case(rng, 1, lambda x: np.where(x > 0, x, np.expm1(x)))


def case_activations_abs(rng):
    return activations_case(rng, 2, np.abs)


def case_gelu_bf16(rng):
    n = 500
    x = (3 * rng.standard_normal(n)).astype(np.float32)
    xb = round_bf16(x).astype(np.float64)
    return Case("activations.tile", "gelu_bf16", (cdiv(n, 256),),
                {"x": x, "y": new("bf16", n)}, {"y": (gelu_ref(xb), "bf16")})


CASES = {name[len("case_"):]: fn for name, fn in sorted(globals().items())
         if name.startswith("case_")}


# ---- running and comparing --------------------------------------------------

def arg_text(name, value, folder):
    """The NAME=... word of `tilec run` for one argument, writing inputs to disk."""
    path = os.path.join(folder, name + ".npy")
    if isinstance(value, tuple):
        _, dtype, shape = value
        return "%s=%s:%s[%s]" % (name, path, dtype, ",".join(str(e) for e in shape))
    if isinstance(value, str):
        return "%s=%s" % (name, value)
    np.save(path, np.ascontiguousarray(value))
    return "%s=%s" % (name, path)


def compare(name, got, want, tol_key):
    """Returns an error message, or None when got matches want."""
    if got.shape != want.shape:
        return "%s: shape %s, expected %s" % (name, got.shape, want.shape)
    got = got.astype(np.float64)
    if tol_key == "exact":
        bad = np.argwhere(~((got == want) | (np.isnan(got) & np.isnan(want))))
        if len(bad):
            i = tuple(bad[0])
            return "%s: %d elements differ; first at %s: got %r, expected %r" % (
                name, len(bad), i, got[i], want[i])
        return None
    tol = TOL[tol_key]
    if not np.all(np.isfinite(got)):
        i = tuple(np.argwhere(~np.isfinite(got))[0])
        return "%s: non-finite value at %s: %r (expected %r)" % (name, i, got[i], want[i])
    scale = max(np.abs(want).max(), 1e-30)
    err = np.abs(got - want)
    rel_l2 = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
    worst = tuple(np.unravel_index(np.argmax(err), err.shape))
    # Per element against the array's scale (10x looser than the L2 bound).
    if rel_l2 > tol or err[worst] > 10 * tol * scale:
        return "%s: relative L2 error %.3g, worst element %s: got %r, expected %r (%s tolerance %g)" % (
            name, rel_l2, worst, got[worst], want[worst], tol_key, tol)
    return None


def run_case(name, tilec, examples, work):
    rng = np.random.default_rng(sum(map(ord, name)))      # fixed per case: reproducible
    case = CASES[name](rng)
    folder = os.path.join(work, name)
    os.makedirs(folder, exist_ok=True)
    for f in os.listdir(folder):                           # no stale outputs
        os.remove(os.path.join(folder, f))
    cmd = [tilec, "run", os.path.join(examples, case.file), "--kernel", case.kernel,
           "--grid", ",".join(str(g) for g in case.grid), "--backend", "cpu"]
    for d in case.defines:
        cmd += ["-D", d]
    cmd += [arg_text(k, v, folder) for k, v in case.args.items()]
    print("$ " + " ".join(cmd))
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=300)
    if proc.stdout:
        print(proc.stdout.rstrip())
    if proc.returncode != 0:
        print("FAIL %s: tilec exited with %d" % (name, proc.returncode))
        return False
    failures = []
    for out, (want, tol_key) in case.expect.items():
        path = os.path.join(folder, out + ".npy")
        if not os.path.exists(path):
            failures.append("%s: tilec wrote no %s" % (out, path))
            continue
        msg = compare(out, np.load(path), np.asarray(want, np.float64), tol_key)
        if msg:
            failures.append(msg)
    for msg in failures:
        print("FAIL %s: %s" % (name, msg))
    if not failures:
        print("ok %s" % name)
    return not failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--tilec")
    ap.add_argument("--examples")
    ap.add_argument("--work")
    ap.add_argument("cases", nargs="*")
    opts = ap.parse_args()
    if opts.list:
        print("\n".join(CASES))
        return 0
    if np is None:
        print("skipped: NumPy is not installed for %s" % sys.executable)
        return SKIP
    if not (opts.tilec and opts.examples and opts.work):
        ap.error("--tilec, --examples and --work are required")
    unknown = [c for c in opts.cases if c not in CASES]
    if unknown:
        ap.error("unknown case(s): %s" % ", ".join(unknown))
    ok = True
    for name in opts.cases or list(CASES):
        ok = run_case(name, opts.tilec, opts.examples, opts.work) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
