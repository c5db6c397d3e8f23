#!/usr/bin/env python3
"""mamba_ssm_compare.py: our Mamba-2 SSD forward pass beside mamba_ssm's.

Run on the GPU machine (never imported by CI).  For each anchor shape of
../shared/bench/anchors.md it
  1. makes inputs (x, dt, A, B, C, D per head; no z; dt fp32 > 0; A fp32 < 0),
     writes them as float32 .npy files,
  2. runs `mamba2 --inputs DIR --save OUT --bench` (our three tile kernels,
     timed with CUDA events, median),
  3. runs mamba_ssm's `mamba_chunk_scan_combined` on the same inputs (timed
     with triton.testing.do_bench after a warm-up, median),
  4. prints both times, their ratio, and the relative L2 difference of y and
     of the final states.

mamba_ssm is not a dependency of the project: it is imported from PYTHONPATH
(see anchors.md for the folder to make; `--make-peer-dir` makes it from a
checkout of state-spaces/mamba).  Without it only our side is run.

  python3 bench/mamba_ssm_compare.py --mamba2 build/examples/mamba2/mamba2
  python3 bench/mamba_ssm_compare.py --make-peer-dir ~/mamba /tmp/peer
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

# (batch, seqlen, heads, headdim, dstate, groups, chunk, dtype) of anchors.md
ANCHORS = [
    (1, 4096, 80, 64, 128, 1, 256, "bf16"),
    (1, 4096, 80, 64, 128, 1, 256, "f32"),
    (8, 4096, 80, 64, 128, 1, 256, "bf16"),
    (8, 4096, 80, 64, 128, 1, 256, "f32"),
    (2, 16384, 80, 64, 128, 1, 256, "bf16"),
    (8, 2048, 24, 64, 128, 1, 256, "bf16"),
    (8, 4096, 80, 64, 64, 8, 256, "bf16"),
]

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


def run_peer(inputs, shape, iters):
    """Returns (median ms, y, final_states) of mamba_chunk_scan_combined, or None."""
    try:
        import torch
        import triton
        from mamba_ssm.ops.triton.ssd_combined import mamba_chunk_scan_combined
    except ImportError as e:
        print(f"note: mamba_ssm not importable ({e}); put the peer folder on PYTHONPATH (anchors.md)")
        return None
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


def rel_l2(a, b):
    import numpy as np
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mamba2", default="build/examples/mamba2/mamba2", help="the mamba2 driver")
    ap.add_argument("--shapes", default="all", help="comma-separated anchor indices (0-based), or all")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", default=None, help="where inputs and outputs go (default: a temp dir)")
    ap.add_argument("--make-peer-dir", nargs=2, metavar=("MAMBA_CHECKOUT", "DEST"))
    args = ap.parse_args()
    if args.make_peer_dir:
        make_peer_dir(*args.make_peer_dir)
        return 0
    import numpy as np

    picks = range(len(ANCHORS)) if args.shapes == "all" else [int(i) for i in args.shapes.split(",")]
    work = args.workdir or tempfile.mkdtemp(prefix="mamba2_compare_")
    rows = []
    for i in picks:
        shape = ANCHORS[i]
        label = "({}, {}, {}, {}, {}, {}, {}) {}".format(*shape)
        print(f"== {label}", flush=True)
        indir = os.path.join(work, f"in{i}")
        outdir = os.path.join(work, f"out{i}")
        os.makedirs(indir, exist_ok=True)
        inputs = make_inputs(shape, args.seed + i)
        for name, arr in inputs.items():
            np.save(os.path.join(indir, name + ".npy"), arr)
        ours_ms, log = run_ours(args.mamba2, shape, indir, outdir, args.iters)
        print(log.rstrip())
        peer = run_peer(inputs, shape, args.iters)
        y = np.load(os.path.join(outdir, "y.npy"))
        fs = np.load(os.path.join(outdir, "final_states.npy"))
        if peer:
            peer_ms, peer_y, peer_fs = peer
            rows.append((label, ours_ms, peer_ms, ours_ms / peer_ms, rel_l2(y, peer_y), rel_l2(fs, peer_fs)))
        else:
            rows.append((label, ours_ms, None, None, None, None))
        shutil.rmtree(indir, ignore_errors=True)    # the inputs are large
    print()
    print(f"{'shape (b, L, H, P, N, G, Q) dtype':44} {'ours ms':>9} {'mamba_ssm':>10} {'ours/theirs':>11} "
          f"{'y rel diff':>11} {'state diff':>11}")
    for label, ours, peer, ratio, dy, ds in rows:
        fmt = lambda v, f: (f.format(v) if v is not None else "-")
        print(f"{label:44} {ours:9.3f} {fmt(peer, '{:10.3f}'):>10} {fmt(ratio, '{:11.2f}'):>11} "
              f"{fmt(dy, '{:11.2e}'):>11} {fmt(ds, '{:11.2e}'):>11}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
