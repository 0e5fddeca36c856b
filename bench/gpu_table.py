"""The bench table on a GPU: loom against PyTorch on the same GPU, in one process.

    PYTHONPATH=build/python LOOM_DEVICE=CUDA python3 bench/gpu_table.py [--runs N] [workload...]

Each workload is written once against torch's API and run twice: by PyTorch
(`import torch`, a CUDA build, on 'cuda') and by loom through its shim
(`loom.shim.torch`, on the device LOOM_DEVICE names). The workloads are
loom-bench-table's (an elementwise chain, neg, clone, sums of 4096^2, matmuls,
a 64->256 3x3 convolution forward and forward+backward, the index ops, the
hlb-like training step at batch 64 and 256) plus the hlb-like step at batch
1024 in float16 (`hlb1024h`). Times are medians of `runs` calls after one
warm-up call (loom compiles there), each call ending when the GPU is done;
"speed" is PyTorch's time over loom's (above 1: loom is faster). hlb rows
print both sides' loss after the timed steps: the same weights and batch
make them agree to the dtype's rounding.

`--device cpu --small` runs every workload at small sizes on the CPU (real
torch's CPU build and loom's CPU device): a check that the script runs where
no GPU is; its times say nothing about a GPU.
"""
import argparse
import statistics
import sys
import time

import numpy as np


def data(shape, seed, low=None, high=None):
    rng = np.random.default_rng(seed)
    if low is not None:
        return rng.integers(low, high, shape).astype(np.int64)
    return rng.standard_normal(shape).astype(np.float32)


class Side:
    """One framework (torch or loom's shim) on one device."""

    def __init__(self, name, T, device, realize_all):
        self.name, self.T, self.device, self._realize_all = name, T, device, realize_all

    def tensor(self, array, dtype=None):
        t = self.T.from_numpy(array.copy()).to(self.device)  # torch's shares memory: updates must not reach `array`
        return t.to(dtype) if dtype is not None else t

    def finish(self, out):
        """Waits until `out` (a tensor or a list) is computed."""
        outs = out if isinstance(out, (list, tuple)) else [out]
        if self._realize_all is not None:
            self._realize_all([t for t in outs if t is not None])
        if self.device == "cuda":
            self.T.cuda.synchronize()


def elementwise(small):
    n = 1 << (16 if small else 24)

    def make(s):
        a, b, c = (s.tensor(data((n,), i)) for i in range(3))
        return {"chain": lambda: ((a * b + c).relu() * 0.5).exp().sub(a).sigmoid(),
                "neg": lambda: a.neg(), "clone": lambda: a * 1.0}
    return make


def sums(small):
    n = 256 if small else 4096

    def make(s):
        sq = s.tensor(data((n, n), 3))
        return {"sum_dim1": lambda: sq.sum(1), "sum_dim0": lambda: sq.sum(0), "sum_all": lambda: sq.sum()}
    return make


def matmuls(small):
    def make(s):
        out = {}
        for m in (512, 1024, 2048):
            k = m // 8 if small else m
            a, b = s.tensor(data((k, k), m)), s.tensor(data((k, k), m + 1))
            out[f"matmul{m}"] = (lambda a, b: lambda: a @ b)(a, b)
        return out
    return make


def convs(small):
    n, c, o, hw = (4, 8, 16, 8) if small else (64, 64, 256, 16)

    def make(s):
        F = s.T.nn.functional
        x, w = s.tensor(data((n, c, hw, hw), 4)), s.tensor(data((o, c, 3, 3), 5))
        g = s.tensor(data((n, o, hw, hw), 6))

        def fwdbwd():
            xg, wg = x.detach().requires_grad_(True), w.detach().requires_grad_(True)
            return list(s.T.autograd.grad([F.conv2d(xg, wg, padding=1)], [xg, wg], [g]))
        return {"conv_fwd": lambda: F.conv2d(x, w, padding=1), "conv_fwdbwd": fwdbwd}
    return make


def index_ops(small):
    rows, width, sq = (500, 64, 256) if small else (50000, 3072, 4096)

    def make(s):
        table = s.tensor(data((rows, width), 7))
        perm = s.tensor(np.random.default_rng(8).permutation(rows).astype(np.int64))
        square = s.tensor(data((sq, sq), 9))
        idx = s.tensor(data((sq, sq), 10, 0, sq))
        acc = s.tensor(np.zeros((sq, sq), np.float32))
        row = s.tensor(data((1, sq), 11))
        million = s.tensor(data((1 << (12 if small else 20),), 12))

        def row_write():
            acc[7:8] = row
            return acc
        return {"index:index_select": lambda: table.index_select(0, perm),
                "index:gather": lambda: square.gather(1, idx),
                "index:scatter_add": lambda: acc.scatter_add(1, idx, square),
                "index:row_write": row_write,
                "index:cumsum": lambda: square.cumsum(1),
                "index:sort": lambda: million.sort(0)[0]}
    return make


def hlb(batch, dtype_name, small):
    """The hlb-like step of bench/hlb_step.h: whitening conv, three conv-pool-BN-GELU groups, a max pool, a
    linear layer, label-smoothed cross-entropy, SGD with Nesterov momentum and weight decay."""
    name = f"hlb{batch}" + ("h" if dtype_name == "float16" else "")
    widths = (8, 16, 32) if small else (64, 256, 512)
    batch = 8 if small else batch
    rng = np.random.default_rng(7)
    arrays, running = [], []

    def uniform(shape, fan_in):
        bound = 1 / np.sqrt(fan_in)
        arrays.append(rng.uniform(-bound, bound, shape).astype(np.float32))

    def bn(c):
        arrays.extend([np.ones(c, np.float32), np.zeros(c, np.float32)])
        running.extend([np.zeros(c, np.float32), np.ones(c, np.float32)])
    uniform((24, 3, 2, 2), 12)
    cin = 24
    for w in widths:
        uniform((w, cin, 3, 3), cin * 9)
        bn(w)
        uniform((w, w, 3, 3), w * 9)
        bn(w)
        cin = w
    uniform((10, cin), cin)
    uniform((10,), cin)
    images, labels = data((batch, 3, 32, 32), 11), data((batch,), 12, 0, 10)

    def make(s):
        T = s.T
        F, dt = T.nn.functional, getattr(T, dtype_name)
        params = [s.tensor(a, dt).requires_grad_() for a in arrays]
        stats = [s.tensor(a, dt) for a in running]
        x, y = s.tensor(images, dt), s.tensor(labels)
        opt = T.optim.SGD(params, lr=0.01, momentum=0.9, nesterov=True, weight_decay=5e-4)

        def step():
            p, r = iter(params), iter(stats)

            def bn_gelu(h):
                w, b, mean, var = next(p), next(p), next(r), next(r)
                return F.gelu(F.batch_norm(h, mean, var, w, b, training=True, momentum=0.1, eps=1e-5))
            h = F.conv2d(x, next(p))
            for _ in widths:
                h = bn_gelu(F.max_pool2d(F.conv2d(h, next(p), padding=1), 2))
                h = bn_gelu(F.conv2d(h, next(p), padding=1))
            h = h.amax(dim=(2, 3))
            loss = F.cross_entropy(F.linear(h, next(p), next(p)), y, label_smoothing=0.2)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            buffers = [v for st in opt.state.values() for v in st.values() if hasattr(v, "shape")]
            return [loss.detach()] + params + stats + buffers
        return {name: step}
    return make


GROUPS = [elementwise, sums, matmuls, convs, index_ops,
          lambda small: hlb(64, "float32", small), lambda small: hlb(256, "float32", small),
          lambda small: hlb(1024, "float16", small)]


def time_side(side, make, wanted, runs):
    """{workload: (median ms, last result's first value or None, error or None)} for one side."""
    out = {}
    try:
        fns = make(side)
    except Exception as e:  # noqa: BLE001 - a side that cannot build the inputs reports why
        return {None: (None, None, f"{type(e).__name__}: {e}")}
    for name, fn in fns.items():
        if wanted and name not in wanted:
            continue
        try:
            ms = []
            for i in range(runs + 1):
                # loom interns graphs: while the last result lives, the same expression is already computed.
                res = None
                t0 = time.perf_counter()
                res = fn()
                side.finish(res)
                if i:
                    ms.append((time.perf_counter() - t0) * 1e3)
            first = res[0] if name.startswith("hlb") else None  # the step's loss
            out[name] = (statistics.median(ms), None if first is None else float(first), None)
        except Exception as e:  # noqa: BLE001 - PyTorch's CPU build lacks half convolutions, say
            out[name] = (None, None, f"{type(e).__name__}: {str(e).splitlines()[0][:80]}")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--small", action="store_true", help="small sizes (a check that the script runs)")
    ap.add_argument("workloads", nargs="*")
    args = ap.parse_args(argv)

    import torch
    import loom
    import loom.shim.torch as ltorch
    if args.device == "cuda":
        if not torch.cuda.is_available():
            sys.exit("gpu_table: PyTorch sees no GPU (--device cpu runs both sides on the CPU)")
        if loom._C.device() != "cuda":
            sys.exit("gpu_table: loom computes on the CPU here; set LOOM_DEVICE=CUDA")
        where = torch.cuda.get_device_name(0)
    else:
        where = "CPU"
    sides = [Side("torch", torch, args.device, None), Side("loom", ltorch, args.device, loom.realize_all)]
    print(f"gpu_table: {where}; torch {torch.__version__}; {args.runs} runs after a warm-up"
          + ("; small sizes" if args.small else ""))
    print("\n| workload | loom ms | torch ms | speed | note |\n|---|---|---|---|---|", flush=True)
    for group in GROUPS:
        make = group(args.small)
        torch_rows, loom_rows = (time_side(s, make, args.workloads, args.runs) for s in sides)
        for name in dict.fromkeys(list(torch_rows) + list(loom_rows)):
            (lm, lv, le), (tm, tv, te) = loom_rows.get(name, (None,) * 3), torch_rows.get(name, (None,) * 3)
            note = "; ".join(n for n in (le and f"loom: {le}", te and f"torch: {te}",
                                         lv is not None and tv is not None and f"loss loom {lv:.6f} torch {tv:.6f}")
                             if n)
            speed = f"{tm / lm:.2f}x" if lm and tm else ""
            fmt = lambda v: f"{v:.3f}" if v is not None else ""  # noqa: E731
            print(f"| {name or '(setup)'} | {fmt(lm)} | {fmt(tm)} | {speed} | {note} |", flush=True)


if __name__ == "__main__":
    main()
