/* gen_frontend.c: writes the input of bench_frontend, a valid Tile program of
 * about LINES lines (default 1000): groups of file constants, fn helpers and
 * kernels using most constructs (tuples, methods, keyword arguments, for /
 * static_range / while / if-else, var and compound assignment, mma loops,
 * reductions, scans, static_assert, tune blocks).  Every group gets its own
 * names, so the file is one program.
 *
 *   gen_frontend OUT.tile [LINES]                                          */
#include <stdio.h>
#include <stdlib.h>

/* One group of declarations; each %1$d is the group number. */
static const char *const group_text =
    "// ---- group %1$d -------------------------------------------------------\n"
    "const SCALE_%1$d = 0.5;\n"
    "const LOG2E_%1$d = 1.4426950408889634;\n"
    "\n"
    "fn softplus_%1$d(x) { return where(x > 20.0, x, log(1.0 + exp(x))); }\n"
    "fn gelu_%1$d(x) {\n"
    "    let inner = 0.7978845608 * (x + 0.044715 * x * x * x);\n"
    "    return 0.5 * x * (1.0 + tanh(inner));\n"
    "}\n"
    "\n"
    "kernel act_%1$d(x: f32[M, N], out: f32[M, N], const BM: i32 = 16, const BN: i32 = 64)\n"
    "        with (num_warps = 4) {\n"
    "    let (r, c) = (bid(0), bid(1));\n"
    "    let t = load(x, index=(r, c), shape=(BM, BN));\n"
    "    let a = softplus_%1$d(t) * SCALE_%1$d;\n"
    "    let b = gelu_%1$d(t) - sigmoid(t);\n"
    "    let m = maximum(a, b) + minimum(a, 0.0);\n"
    "    let y = where(isnan(m), 0.0, m) * LOG2E_%1$d;\n"
    "    store(out, index=(r, c), tile=y.astype(f32));\n"
    "}\n"
    "\n"
    "kernel softmax_%1$d(x: f32[M, N], out: f32[M, N], const BLOCK_N: i32 = 128) {\n"
    "    let row = bid(0);\n"
    "    let ntiles = num_tiles(x, 1, (1, BLOCK_N));\n"
    "    var m = max(load(x, index=(row, 0), shape=(1, BLOCK_N), padding=neg_inf));\n"
    "    var s = 0.0;\n"
    "    for j in range(ntiles) {\n"
    "        let t = load(x, index=(row, j), shape=(1, BLOCK_N), padding=neg_inf);\n"
    "        let m_new = maximum(m, max(t));\n"
    "        s = s * exp(m - m_new) + sum(exp(t - m_new));\n"
    "        m = m_new;\n"
    "    }\n"
    "    let inv = 1.0 / s;\n"
    "    for j in range(ntiles) {\n"
    "        let t = load(x, index=(row, j), shape=(1, BLOCK_N), padding=neg_inf);\n"
    "        store(out, index=(row, j), tile=exp(t - m) * inv);\n"
    "    }\n"
    "}\n"
    "\n"
    "kernel layernorm_%1$d(x: f32[M, N], w: f32[N], b: f32[N], out: f32[M, N], eps: f32,\n"
    "                     const BLOCK_N: i32 = 1024) {\n"
    "    let row = bid(0);\n"
    "    let t = load(x, index=(row, 0), shape=(1, BLOCK_N));\n"
    "    let valid = arange(BLOCK_N) < N;\n"
    "    let n = astype(N, f32);\n"
    "    let mean = sum(t, axis=1, keepdims=true) / n;\n"
    "    let xc = where(valid, t - mean, 0.0);\n"
    "    let rstd = rsqrt(xc.sum(axis=1, keepdims=true) / n + eps);\n"
    "    let wt = load(w, index=(0,), shape=(BLOCK_N,));\n"
    "    let bt = load(b, index=(0,), shape=(BLOCK_N,));\n"
    "    store(out, index=(row, 0), tile=xc * rstd * wt + bt);\n"
    "}\n"
    "\n"
    "kernel matmul_%1$d(a: f32[M, K], b: f32[K, N], c: f32[M, N],\n"
    "                  const BM: i32 = 32, const BN: i32 = 32, const BK: i32 = 16) {\n"
    "    let (i, j) = (bid(0), bid(1));\n"
    "    var acc = zeros((BM, BN), f32);\n"
    "    for k in range(num_tiles(a, 1, (BM, BK))) {\n"
    "        let ta = load(a, index=(i, k), shape=(BM, BK));\n"
    "        let tb = load(b, index=(k, j), shape=(BK, BN));\n"
    "        acc = mma(ta, tb, acc);\n"
    "    }\n"
    "    store(c, index=(i, j), tile=acc);\n"
    "}\n"
    "\n"
    "tune matmul_%1$d { BM in (32, 64); BN in (32, 64); num_warps in (4, 8); }\n"
    "\n"
    "kernel control_%1$d(x: i32[N], out: i32[N], n: i32, const B: i32 = 64) {\n"
    "    let blk = bid(0);\n"
    "    static_assert(B %% 16 == 0, \"B must be a multiple of 16\");\n"
    "    var acc = zeros((B,), i32);\n"
    "    for s in static_range(4) {\n"
    "        acc += load(x, index=(blk * 4 + s,), shape=(B,));\n"
    "    }\n"
    "    var k = 0;\n"
    "    while k < n {\n"
    "        k += 1;\n"
    "        if k %% 3 == 0 { continue; }\n"
    "        acc = acc ^ (acc << 1);\n"
    "    }\n"
    "    if blk == 0 {\n"
    "        acc = acc & 0xFF;\n"
    "    } else if blk == 1 {\n"
    "        acc = acc | 1;\n"
    "    } else {\n"
    "        acc = acc >> 2;\n"
    "    }\n"
    "    store(out, index=(blk,), tile=cumsum(acc, axis=0));\n"
    "}\n"
    "\n";

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: gen_frontend OUT.tile [LINES]\n");
        return 2;
    }
    int lines = argc == 3 ? atoi(argv[2]) : 1000;
    if (lines < 1) lines = 1;
    FILE *out = fopen(argv[1], "w");
    if (!out) {
        perror(argv[1]);
        return 1;
    }
    fprintf(out, "// Generated by bench/frontend/gen_frontend.c: input of bench_frontend.\n\n");
    int per_group = count_lines(group_text);
    for (int g = 0, written = 2; written < lines; g++, written += per_group)
        fprintf(out, group_text, g);
    if (fclose(out) != 0) {
        perror(argv[1]);
        return 1;
    }
    return 0;
}
