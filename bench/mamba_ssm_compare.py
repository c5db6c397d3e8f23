#!/usr/bin/env python3
"""mamba_ssm_compare.py: our Mamba-2 SSD forward pass beside mamba_ssm's.

Run on the GPU machine (never imported by CI).  For each anchor shape of
../shared/bench/anchors.md (and one more, ANCHORS below) it
  1. makes inputs (x, dt, A, B, C, D per head; no z; dt fp32 > 0; A fp32 < 0),
     writes them as float32 .npy files,
  2. runs `mamba2 --inputs DIR --save OUT --bench` (our three tile kernels,
     timed with CUDA events, median),
  3. runs mamba_ssm's `mamba_chunk_scan_combined` on the same inputs (timed
     with triton.testing.do_bench after a warm-up, median),
  4. prints both times, their ratio, and the relative L2 difference of y and
     of the final states,
  5. and, unless --no-torch-ref, times the PyTorch reference on the same inputs:
     `ssd_minimal_discrete` (mamba_ssm's modules/ssd_minimal.py, Listing 1 of
     the Mamba-2 paper: fp32 einsums) plus D x, with the ratio and y's
     difference from ours.  It needs seqlen to be a multiple of the chunk; a
     shape it cannot run (out of memory, say) gets a note and a dash.

mamba_ssm is not a dependency of the project: it is imported from PYTHONPATH
(see anchors.md for the folder to make; `--make-peer-dir` makes it from a
checkout of state-spaces/mamba).  Without it only our side is run.

  python3 bench/mamba_ssm_compare.py --mamba2 build/examples/mamba2/mamba2
  python3 bench/mamba_ssm_compare.py --make-peer-dir ~/mamba /tmp/peer

--sweep measures the same two, the same way, at (batch 2, heads 80, headdim 64,
dstate 128, groups 1, chunk 256, bf16) for seqlen 1k, 2k, ..., 64k (or
--seqlens), writes a CSV (--csv; rewritten after every point, so a run cut
short keeps what it measured) and draws time against seqlen (--png: log2 x,
log y, one line each).  --plot-only CSV redraws the PNG from such a CSV, on
any machine.  The plot uses matplotlib when it imports, else a small built-in
PNG writer (zlib + struct; colours as in the CSV's header comment).

  python3 bench/mamba_ssm_compare.py --mamba2 build/examples/mamba2/mamba2 --sweep \\
      --csv docs/mamba2_seqlen.csv --png docs/mamba2_seqlen.png
  python3 bench/mamba_ssm_compare.py --plot-only docs/mamba2_seqlen.csv --png docs/mamba2_seqlen.png
"""
import argparse
import csv
import datetime
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

# (batch, seqlen, heads, headdim, dstate, groups, chunk, dtype) of anchors.md, and one more
ANCHORS = [
    (1, 4096, 80, 64, 128, 1, 256, "bf16"),
    (1, 4096, 80, 64, 128, 1, 256, "f32"),
    (8, 4096, 80, 64, 128, 1, 256, "bf16"),
    (8, 4096, 80, 64, 128, 1, 256, "f32"),
    (2, 16384, 80, 64, 128, 1, 256, "bf16"),
    (8, 2048, 24, 64, 128, 1, 256, "bf16"),
    (8, 4096, 80, 64, 64, 8, 256, "bf16"),
    # not in anchors.md: the last shape in tf32
    (8, 4096, 80, 64, 64, 8, 256, "f32"),
]

# --sweep: this shape at each seqlen (issue 5's plot of time against seqlen)
SWEEP_SHAPE = (2, None, 80, 64, 128, 1, 256, "bf16")
SWEEP_SEQLENS = [1024, 2048, 4096, 8192, 16384, 32768, 65536]
COLOURS = {"ours": (0x1F, 0x77, 0xB4), "mamba_ssm": (0xFF, 0x7F, 0x0E)}   # blue, orange
CSV_FIELDS = ["seqlen", "ours_ms", "mamba_ssm_ms", "ratio", "y_rel_diff", "state_rel_diff"]

PEER_FILES = [
    "mamba_ssm/ops/triton/ssd_bmm.py", "mamba_ssm/ops/triton/ssd_chunk_scan.py",
    "mamba_ssm/ops/triton/ssd_chunk_state.py", "mamba_ssm/ops/triton/ssd_combined.py",
    "mamba_ssm/ops/triton/ssd_state_passing.py", "mamba_ssm/ops/triton/softplus.py",
    "mamba_ssm/ops/triton/layernorm_gated.py", "mamba_ssm/ops/triton/k_activations.py",
    "mamba_ssm/utils/torch.py", "mamba_ssm/utils/determinism.py",
    "mamba_ssm/modules/ssd_minimal.py",
]


def make_peer_dir(src, dst):
    """Copies the files mamba_chunk_scan_combined needs, with empty __init__.py
    files (the package's own __init__ pulls in CUDA extensions)."""
    for rel in PEER_FILES:
        s = os.path.join(src, rel)
        if not os.path.exists(s):
            print(f"note: {s} not found, skipped")
            continue
        d = os.path.join(dst, rel)
        os.makedirs(os.path.dirname(d), exist_ok=True)
        shutil.copy(s, d)
    for root, _dirs, _files in os.walk(os.path.join(dst, "mamba_ssm")):
        init = os.path.join(root, "__init__.py")
        if not os.path.exists(init):
            open(init, "w").close()
    print(f"peer folder ready: PYTHONPATH={dst}")


def make_inputs(shape, seed):
    import numpy as np
    b, L, H, P, N, G, _Q, _dt = shape
    rng = np.random.default_rng(seed)
    f32 = np.float32
    return {
        "x": rng.standard_normal((b, L, H, P), dtype=f32),
        "dt": rng.uniform(0.001, 0.1, (b, L, H)).astype(f32),
        "A": (-np.exp(rng.uniform(0.0, np.log(16.0), (H,)))).astype(f32),
        "B": rng.standard_normal((b, L, G, N), dtype=f32),
        "C": rng.standard_normal((b, L, G, N), dtype=f32),
        "D": rng.standard_normal((H,), dtype=f32),
    }


def run_ours(mamba2, shape, indir, outdir, iters):
    dtype = shape[7]
    cmd = [mamba2, "--backend", "cuda", "--inputs", indir, "--save", outdir, "--chunk", str(shape[6]),
           "--dtype", dtype, "--bench", "--iters", str(iters)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise RuntimeError(f"mamba2 exited with {proc.returncode}")
    m = re.search(r"^\s*total\s+([0-9.]+) ms", proc.stdout, re.M)
    if not m:
        raise RuntimeError("no 'total' time in mamba2's output:\n" + proc.stdout)
    return float(m.group(1)), proc.stdout


_peer_missing = []      # the import error, once seen (said once, not at every shape)


def run_peer(inputs, shape, iters):
    """Returns (median ms, y, final_states) of mamba_chunk_scan_combined, or None."""
    if _peer_missing:
        return None
    try:
        import torch
        import triton
        from mamba_ssm.ops.triton.ssd_combined import mamba_chunk_scan_combined
    except ImportError as e:
        _peer_missing.append(str(e))
        print(f"note: mamba_ssm not importable ({e}); put the peer folder on PYTHONPATH (anchors.md). "
              "Only our side is measured from here on.", flush=True)
        return None
    out = _peer_on_gpu(torch, triton, mamba_chunk_scan_combined, inputs, shape, iters)
    torch.cuda.empty_cache()    # its tensors are gone: give the memory back before the next mamba2 process
    return out


def _peer_on_gpu(torch, triton, mamba_chunk_scan_combined, inputs, shape, iters):
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[shape[7]]
    dev = "cuda"
    x = torch.from_numpy(inputs["x"]).to(dev, dtype)
    B = torch.from_numpy(inputs["B"]).to(dev, dtype)
    C = torch.from_numpy(inputs["C"]).to(dev, dtype)
    dt = torch.from_numpy(inputs["dt"]).to(dev)
    A = torch.from_numpy(inputs["A"]).to(dev)
    D = torch.from_numpy(inputs["D"]).to(dev)

    def call():
        return mamba_chunk_scan_combined(x, dt, A, B, C, shape[6], D=D, return_final_states=True)

    y, final = call()           # the first call autotunes
    torch.cuda.synchronize()
    ms = triton.testing.do_bench(call, warmup=25, rep=max(100, iters * 2), return_mode="median")
    return ms, y.float().cpu().numpy(), final.float().cpu().numpy()


_ref_missing = []       # the import error of the PyTorch reference, once seen


def run_torch_ref(inputs, shape, iters):
    """Returns (median ms, y) of the PyTorch reference on the same inputs, or
    None when it cannot run here."""
    if _ref_missing:
        return None
    b, L, H, P, N, G, Q, _dt = shape
    if L % Q:
        return None
    try:
        import torch
        import triton
        from mamba_ssm.modules.ssd_minimal import ssd_minimal_discrete
    except ImportError as e:
        _ref_missing.append(str(e))
        print(f"note: the PyTorch reference is not importable ({e}); no reference column.", flush=True)
        return None
    out = None
    try:
        dev = "cuda"
        x = torch.from_numpy(inputs["x"]).to(dev)
        dt = torch.from_numpy(inputs["dt"]).to(dev)
        A = torch.from_numpy(inputs["A"]).to(dev)
        Bh = torch.from_numpy(inputs["B"]).to(dev).repeat_interleave(H // G, dim=2)   # groups -> heads
        Ch = torch.from_numpy(inputs["C"]).to(dev).repeat_interleave(H // G, dim=2)
        D = torch.from_numpy(inputs["D"]).to(dev)

        def call():
            y, _final = ssd_minimal_discrete(x * dt[..., None], A[None, None, :] * dt, Bh, Ch, Q)
            return y + x * D[:, None]

        y = call()
        torch.cuda.synchronize()
        ms = triton.testing.do_bench(call, warmup=5, rep=max(50, iters), return_mode="median")
        out = (ms, y.float().cpu().numpy())
    except Exception as e:      # out of memory at the larger shapes, most likely: a dash, not a failed run
        print(f"note: the PyTorch reference did not run at this shape: {type(e).__name__}: {e}", flush=True)
    torch.cuda.empty_cache()
    return out


def rel_l2(a, b):
    import numpy as np
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def shape_label(shape):
    return "({}, {}, {}, {}, {}, {}, {}) {}".format(*shape)


def measure(args, shape, work, tag, seed):
    """One shape, both sides on the same inputs: makes the inputs and writes them
    to work/in<tag>, runs ours (outputs in work/out<tag>), then mamba_ssm, and
    compares.  Returns a dict: label, ours_ms, peer_ms, ratio, dy, ds (the last
    four None without the peer), gpu (from mamba2's bench line), outdir."""
    import numpy as np
    label = shape_label(shape)
    print(f"== {label}", flush=True)
    indir = os.path.join(work, f"in{tag}")
    outdir = os.path.join(work, f"out{tag}")
    os.makedirs(indir, exist_ok=True)
    inputs = make_inputs(shape, seed)
    for name, arr in inputs.items():
        np.save(os.path.join(indir, name + ".npy"), arr)
    try:
        ours_ms, log = run_ours(args.mamba2, shape, indir, outdir, args.iters)
    finally:
        shutil.rmtree(indir, ignore_errors=True)    # the inputs are large
    print(log.rstrip(), flush=True)
    m = re.search(r"^bench: \S+ on (.+?), \d+ iterations", log, re.M)
    row = {"label": label, "ours_ms": ours_ms, "peer_ms": None, "ratio": None, "dy": None, "ds": None,
           "ref_ms": None, "ref_ratio": None, "dy_ref": None, "gpu": m.group(1) if m else None, "outdir": outdir}
    ref = run_torch_ref(inputs, shape, args.iters) if getattr(args, "torch_ref", False) else None
    if ref:
        row.update(ref_ms=ref[0], ref_ratio=ours_ms / ref[0],
                   dy_ref=rel_l2(np.load(os.path.join(outdir, "y.npy")), ref[1]))
    peer = run_peer(inputs, shape, args.iters)
    del inputs
    if peer:
        peer_ms, peer_y, peer_fs = peer
        row.update(peer_ms=peer_ms, ratio=ours_ms / peer_ms,
                   dy=rel_l2(np.load(os.path.join(outdir, "y.npy")), peer_y),
                   ds=rel_l2(np.load(os.path.join(outdir, "final_states.npy")), peer_fs))
    return row


def print_table(rows):
    print()
    print(f"{'shape (b, L, H, P, N, G, Q) dtype':44} {'ours ms':>9} {'mamba_ssm':>10} {'ours/theirs':>11} "
          f"{'y rel diff':>11} {'state diff':>11} {'torch ref':>10} {'ours/ref':>9} {'y vs ref':>9}")
    fmt = lambda v, f: (f.format(v) if v is not None else "-")
    for r in rows:
        print(f"{r['label']:44} {r['ours_ms']:9.3f} {fmt(r['peer_ms'], '{:10.3f}'):>10} "
              f"{fmt(r['ratio'], '{:11.2f}'):>11} {fmt(r['dy'], '{:11.2e}'):>11} {fmt(r['ds'], '{:11.2e}'):>11} "
              f"{fmt(r.get('ref_ms'), '{:10.3f}'):>10} {fmt(r.get('ref_ratio'), '{:9.3f}'):>9} "
              f"{fmt(r.get('dy_ref'), '{:9.1e}'):>9}")


# ---- --sweep: CSV ------------------------------------------------------------

def sweep_title(gpu):
    b, _L, H, P, N, G, Q, dtype = SWEEP_SHAPE
    return (f"Mamba-2 SSD forward (batch {b}, heads {H}, headdim {P}, dstate {N}, groups {G}, chunk {Q}), "
            f"{dtype}, {gpu or 'GPU unknown'}")


def write_csv(path, title, gpu, iters, points):
    """points: dicts with the CSV_FIELDS keys (None for what was not measured)."""
    hexc = lambda c: "#%02x%02x%02x" % c
    fmts = {"seqlen": "{:d}", "ours_ms": "{:.4f}", "mamba_ssm_ms": "{:.4f}", "ratio": "{:.3f}",
            "y_rel_diff": "{:.3e}", "state_rel_diff": "{:.3e}"}
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(path + ".tmp", "w", newline="") as f:
        f.write(f"# title: {title}\n")
        f.write(f"# gpu: {gpu or 'unknown'}\n")
        f.write(f"# date: {datetime.date.today().isoformat()}\n")
        f.write(f"# timing: ours = mamba2 --bench total (CUDA events, median of {iters} after warm-up); "
                "mamba_ssm = mamba_chunk_scan_combined, triton.testing.do_bench median after an autotuning call; "
                "same inputs, same run\n")
        f.write("# ratio = ours_ms / mamba_ssm_ms; rel diffs: relative L2 of ours against mamba_ssm (y, final states)\n")
        f.write(f"# plot colours: ours {hexc(COLOURS['ours'])} (blue), mamba_ssm {hexc(COLOURS['mamba_ssm'])} (orange)\n")
        w = csv.writer(f, lineterminator="\n")
        w.writerow(CSV_FIELDS)
        for p in points:
            w.writerow(["" if p.get(k) is None else fmts[k].format(p[k]) for k in CSV_FIELDS])
    os.replace(path + ".tmp", path)


def read_csv(path):
    """Returns (title, points) of a CSV that write_csv wrote."""
    title, header, points = None, None, []
    with open(path, newline="") as f:
        for line in f:
            if line.startswith("#"):
                if line.startswith("# title:"):
                    title = line[len("# title:"):].strip()
                continue
            if not line.strip():
                continue
            cells = next(csv.reader([line]))
            if header is None:
                header = [c.strip() for c in cells]
                missing = [k for k in ("seqlen", "ours_ms", "mamba_ssm_ms") if k not in header]
                if missing:
                    raise ValueError(f"{path}: header {header} lacks {', '.join(missing)}")
                continue
            p = {}
            for k, c in zip(header, cells):
                c = c.strip()
                p[k] = None if c == "" else (int(c) if k == "seqlen" else float(c))
            points.append(p)
    if header is None:
        raise ValueError(f"{path}: no header row")
    return title or "Mamba-2 SSD forward: time against seqlen", points


# ---- --sweep: the plot -------------------------------------------------------

def seqlen_label(n):
    return f"{n // 1024}k" if n % 1024 == 0 else str(n)


def series_of(points):
    """{name: ([seqlen], [ms])} with the points measured, ours first."""
    out = {}
    for name, key in (("ours", "ours_ms"), ("mamba_ssm", "mamba_ssm_ms")):
        pts = sorted((p["seqlen"], p[key]) for p in points if p.get(key) is not None and p[key] > 0)
        if pts:
            out[name] = ([x for x, _ in pts], [y for _, y in pts])
    return out


def log_ticks_125(lo, hi):
    """1-2-5 values from the largest at or below lo to the smallest at or above hi."""
    e = math.floor(math.log10(lo))
    vals = []
    while True:
        for m in (1, 2, 5):
            v = m * 10.0 ** e
            if v <= lo * (1 + 1e-9):
                vals = [v]
            elif vals and vals[-1] < hi * (1 - 1e-9):
                vals.append(v)
        if vals and vals[-1] >= hi * (1 - 1e-9):
            return [float(f"{v:.6g}") for v in vals]
        e += 1


def plot(png, title, points, plotter="auto"):
    """Draws time against seqlen; returns which plotter drew it."""
    series = series_of(points)
    if not series:
        raise ValueError("nothing to plot: no measured times")
    if plotter in ("auto", "matplotlib"):
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
            from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
        except ImportError as e:
            if plotter == "matplotlib":
                raise SystemExit(f"--plotter matplotlib: matplotlib not importable ({e})")
            print(f"note: matplotlib not importable ({e}); drawing with the built-in PNG writer")
        else:
            fig, ax = plt.subplots(figsize=(9, 5.5), dpi=120)
            for name, (xs, ys) in series.items():
                ax.plot(xs, ys, marker="s" if name == "ours" else "D", linewidth=2,
                        color="#%02x%02x%02x" % COLOURS[name], label=name)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            seqlens = sorted({x for xs, _ in series.values() for x in xs})
            ax.xaxis.set_major_locator(FixedLocator(seqlens))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: seqlen_label(int(round(v)))))
            ax.xaxis.set_minor_locator(NullLocator())
            ys_all = [y for _, ys in series.values() for y in ys]
            yt = log_ticks_125(min(ys_all), max(ys_all))
            ax.yaxis.set_major_locator(FixedLocator(yt))
            if len(yt) > 1:
                ax.set_ylim(yt[0], yt[-1])
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
            ax.yaxis.set_minor_locator(NullLocator())
            ax.set_xlabel("seqlen (tokens)")
            ax.set_ylabel("time (ms, median)")
            ax.set_title(title, fontsize=9)
            ax.grid(True, alpha=0.3)
            ax.legend()
            fig.tight_layout()
            fig.savefig(png)
            plt.close(fig)
            return "matplotlib"
    draw_png(png, title, series)
    return "built-in"


# A 3x5 capital font for the built-in writer: 15 bits per glyph, rows top to bottom.
_FONT = {
    "0": "111101101101111", "1": "010110010010111", "2": "111001111100111", "3": "111001111001111",
    "4": "101101111001001", "5": "111100111001111", "6": "111100111101111", "7": "111001001010010",
    "8": "111101111101111", "9": "111101111001111", "A": "010101111101101", "B": "110101110101110",
    "C": "011100100100011", "D": "110101101101110", "E": "111100110100111", "F": "111100110100100",
    "G": "011100101101011", "H": "101101111101101", "I": "111010010010111", "J": "001001001101010",
    "K": "101101110101101", "L": "100100100100111", "M": "101111111101101", "N": "110101101101101",
    "O": "010101101101010", "P": "110101110100100", "Q": "010101101110011", "R": "110101110101101",
    "S": "011100010001110", "T": "111010010010010", "U": "101101101101111", "V": "101101101101010",
    "W": "101101111111101", "X": "101101010101101", "Y": "101101010010010", "Z": "111001010100111",
    ".": "000000000000010", ",": "000000000010100", "(": "001010010010001", ")": "100010010010100",
    "-": "000000111000000", "_": "000000000000111", ":": "000010000010000", "/": "001001010100100",
    "=": "000111000111000", "+": "000010111010000", " ": "000000000000000",
}


class _Canvas:
    def __init__(self, w, h):
        self.w, self.h = w, h
        self.px = bytearray(b"\xff" * (w * h * 3))

    def dot(self, x, y, c):
        if 0 <= x < self.w and 0 <= y < self.h:
            i = (y * self.w + x) * 3
            self.px[i:i + 3] = bytes(c)

    def rect(self, x0, y0, x1, y1, c):
        for y in range(max(0, y0), min(self.h, y1 + 1)):
            for x in range(max(0, x0), min(self.w, x1 + 1)):
                self.dot(x, y, c)

    def line(self, x0, y0, x1, y1, c, width=1, dash=0):
        n = max(abs(x1 - x0), abs(y1 - y0), 1)
        r0, r1 = -((width - 1) // 2), width // 2
        for i in range(n + 1):
            if dash and (i // dash) % 2:
                continue
            x = round(x0 + (x1 - x0) * i / n)
            y = round(y0 + (y1 - y0) * i / n)
            self.rect(x + r0, y + r0, x + r1, y + r1, c)

    def text_width(self, s, scale):
        return max(0, len(s) * 4 * scale - scale)

    def text(self, x, y, s, c, scale=2):
        """Draws s (upper-cased) with its top-left corner at (x, y)."""
        for k, ch in enumerate(s.upper()):
            bits = _FONT.get(ch, _FONT[" "])
            for r in range(5):
                for col in range(3):
                    if bits[r * 3 + col] == "1":
                        gx = x + (k * 4 + col) * scale
                        gy = y + r * scale
                        self.rect(gx, gy, gx + scale - 1, gy + scale - 1, c)

    def png(self):
        rows = b"".join(b"\x00" + bytes(self.px[y * self.w * 3:(y + 1) * self.w * 3]) for y in range(self.h))

        def chunk(tag, data):
            return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
        return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


def _square(cv, x, y, c):
    cv.rect(x - 4, y - 4, x + 4, y + 4, c)


def _diamond(cv, x, y, c):
    for d in range(-6, 7):
        cv.rect(x - (6 - abs(d)), y + d, x + (6 - abs(d)), y + d, c)


def draw_png(png, title, series):
    """The built-in plotter: log2 x, log10 y, a line and markers per series, tick
    labels, a legend by colour, the title in a 3x5 capital font."""
    W, H = 960, 600
    left, right, top, bottom = 100, 30, 60, 80
    pw, ph = W - left - right, H - top - bottom
    black, grey, light = (0, 0, 0), (90, 90, 90), (225, 225, 225)
    cv = _Canvas(W, H)
    xs_all = sorted({x for xs, _ in series.values() for x in xs})
    ys_all = [y for _, ys in series.values() for y in ys]
    xl0, xl1 = math.log2(xs_all[0]) - 0.5, math.log2(xs_all[-1]) + 0.5
    yt = log_ticks_125(min(ys_all), max(ys_all))
    yl0, yl1 = math.log10(yt[0]), math.log10(yt[-1])
    if yl1 - yl0 < 1e-9:
        yl0, yl1 = yl0 - 0.5, yl1 + 0.5
    X = lambda v: round(left + (math.log2(v) - xl0) / (xl1 - xl0) * pw)
    Y = lambda v: round(top + ph - (math.log10(v) - yl0) / (yl1 - yl0) * ph)
    for v in yt:                                                # y grid, ticks, labels
        cv.line(left, Y(v), left + pw, Y(v), light, dash=4)
        cv.line(left - 6, Y(v), left, Y(v), black)
        s = f"{v:g}"
        cv.text(left - 10 - cv.text_width(s, 2), Y(v) - 5, s, black)
    for v in xs_all:                                            # x grid, ticks, labels
        cv.line(X(v), top, X(v), top + ph, light, dash=4)
        cv.line(X(v), top + ph, X(v), top + ph + 6, black)
        s = seqlen_label(v)
        cv.text(X(v) - cv.text_width(s, 2) // 2, top + ph + 12, s, black)
    cv.line(left, top, left, top + ph, black)                   # the frame
    cv.line(left, top + ph, left + pw, top + ph, black)
    cv.line(left, top, left + pw, top, black)
    cv.line(left + pw, top, left + pw, top + ph, black)
    xlab = "seqlen (tokens)"
    cv.text(left + pw // 2 - cv.text_width(xlab, 2) // 2, H - 40, xlab, grey)
    cv.text(10, top - 22, "time (ms, median)", grey)
    cv.text(max(4, W // 2 - cv.text_width(title, 2) // 2), 14, title, black)
    for k, (name, (xs, ys)) in enumerate(series.items()):
        c = COLOURS[name]
        pts = [(X(x), Y(y)) for x, y in zip(xs, ys)]
        for (a, b), (p, q) in zip(pts, pts[1:]):
            cv.line(a, b, p, q, c, width=3)
        marker = _square if name == "ours" else _diamond
        for a, b in pts:
            marker(cv, a, b, c)
        ly = top + 16 + k * 24                                  # the legend, top left inside
        cv.line(left + 16, ly + 5, left + 56, ly + 5, c, width=3)
        marker(cv, left + 36, ly + 5, c)
        cv.text(left + 66, ly, name, black, scale=2)
    with open(png, "wb") as f:
        f.write(cv.png())


# ---- --sweep -----------------------------------------------------------------

def sweep(args, work):
    args.torch_ref = False      # the sweep is ours against mamba_ssm only
    seqlens = SWEEP_SEQLENS if not args.seqlens else [int(v) for v in args.seqlens.split(",")]
    points, rows, gpu, failed = [], [], None, []
    for k, L in enumerate(seqlens):
        shape = (SWEEP_SHAPE[0], L) + SWEEP_SHAPE[2:]
        try:
            r = measure(args, shape, work, f"_L{L}", args.seed + k)
        except (RuntimeError, OSError, MemoryError) as e:
            print(f"error at seqlen {L}: {e}", flush=True)
            failed.append(L)
            continue
        shutil.rmtree(r["outdir"], ignore_errors=True)
        gpu = gpu or r["gpu"]
        rows.append(r)
        points.append({"seqlen": L, "ours_ms": r["ours_ms"], "mamba_ssm_ms": r["peer_ms"], "ratio": r["ratio"],
                       "y_rel_diff": r["dy"], "state_rel_diff": r["ds"]})
        write_csv(args.csv, sweep_title(gpu), gpu, args.iters, points)
    print_table(rows)
    if _peer_missing:
        print(f"\nmamba_ssm was not measured ({_peer_missing[0]}): the CSV and the plot have ours only.")
    if failed:
        print(f"\nfailed at seqlen {', '.join(map(str, failed))} (see above)")
    if points:
        print(f"\nwrote {args.csv}")
        if args.png:
            print(f"wrote {args.png} ({plot(args.png, sweep_title(gpu), points, args.plotter)})")
    return 1 if failed or not points else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mamba2", default="build/examples/mamba2/mamba2", help="the mamba2 driver")
    ap.add_argument("--shapes", default="all", help="comma-separated anchor indices (0-based), or all")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", default=None, help="where inputs and outputs go (default: a temp dir)")
    ap.add_argument("--make-peer-dir", nargs=2, metavar=("MAMBA_CHECKOUT", "DEST"))
    ap.add_argument("--no-torch-ref", dest="torch_ref", action="store_false",
                    help="leave out the PyTorch reference (ssd_minimal_discrete) column")
    ap.add_argument("--sweep", action="store_true",
                    help="time against seqlen at (2, L, 80, 64, 128, 1, 256) bf16; needs --csv, --png optional")
    ap.add_argument("--seqlens", default=None,
                    help="comma-separated seqlens for --sweep (default: " + ",".join(map(str, SWEEP_SEQLENS)) + ")")
    ap.add_argument("--csv", default=None, help="--sweep: where the CSV goes")
    ap.add_argument("--png", default=None, help="--sweep, --plot-only: where the plot goes")
    ap.add_argument("--plot-only", metavar="CSV", default=None,
                    help="redraw --png from a CSV that --sweep wrote (no GPU needed)")
    ap.add_argument("--plotter", choices=("auto", "matplotlib", "builtin"), default="auto",
                    help="auto: matplotlib if it imports, else the built-in PNG writer")
    args = ap.parse_args()
    if args.make_peer_dir:
        make_peer_dir(*args.make_peer_dir)
        return 0
    if args.plot_only:
        if not args.png:
            ap.error("--plot-only needs --png")
        title, points = read_csv(args.plot_only)
        print(f"wrote {args.png} ({plot(args.png, title, points, args.plotter)}) from {len(points)} rows")
        return 0
    if args.sweep and not args.csv:
        ap.error("--sweep needs --csv (and --png for the plot)")
    work = args.workdir or tempfile.mkdtemp(prefix="mamba2_compare_")
    if args.sweep:
        rc = sweep(args, work)
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
        return rc
    picks = range(len(ANCHORS)) if args.shapes == "all" else [int(i) for i in args.shapes.split(",")]
    rows = [measure(args, ANCHORS[i], work, i, args.seed + i) for i in picks]
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
