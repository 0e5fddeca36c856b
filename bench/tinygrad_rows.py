#!/usr/bin/python3
# tinygrad_rows.py: times the loom-bench-table workloads (bench/table_main.cpp)
# in tinygrad's CPU backend, for a tinygrad column next to libtorch's. Prints
# one line per workload, `tinygrad <workload> <ms>`, the median of --runs
# timed calls after warm-up calls (which compile); each call builds the
# result, realizes it and waits for the device.
#
# tinygrad is not part of this repository and is not installed from PyPI:
# take a source tree and put it on PYTHONPATH (pure Python plus numpy;
# python >= 3.11). Its CPU device compiles C with `clang` (the CC variable
# picks another compiler), so clang must be on PATH (`apt-get install -y clang`).
#   git clone https://github.com/tinygrad/tinygrad /tmp/tinygrad
#   (or from a bare mirror: mkdir -p /tmp/tinygrad &&
#    git --git-dir=<mirror> archive HEAD | tar -x -C /tmp/tinygrad)
#   apt-get install -y clang        # only if `clang --version` fails
#   DEV=CPU PYTHONPATH=/tmp/tinygrad python3 bench/tinygrad_rows.py [--runs 3] [--jit] [workload...]
#   DEV=CPU PYTHONPATH=/tmp/tinygrad python3 bench/tinygrad_rows.py --small   # quick check at tiny sizes
# Checked with tinygrad a9069c177a9da9cca18593edf55acd2e6073cca6 (2026-08-22).
#
# Workloads (same names and shapes as loom-bench-table): chain, neg, clone,
# sum_dim1, sum_dim0, sum_all, matmul512/1024/2048, conv_fwd, conv_fwdbwd, hlb64,
# hlb256. Not here: the `index` rows (tinygrad's gather and index_select
# lower to one-hot compares and reductions, O(n^2) work at these sizes).
# By default every call runs eagerly (scheduling included, as loom's rows
# do); --jit wraps each workload in TinyJit, which replays captured kernels.
# Threads: at the commit above the CPU device runs every kernel on one worker
# thread; NUM_CPU_THREADS (default: the CPU count) only splits a kernel's
# outer loop into that many chunks, which that thread runs one after another.
import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("DEV", "CPU")
import numpy as np  # noqa: E402
from tinygrad import Context, Device, Tensor, TinyJit, nn  # noqa: E402

rng = np.random.default_rng(0)


def randn(*shape):
  return Tensor(rng.standard_normal(shape, dtype=np.float32)).realize()


def sync():
  Device[Device.DEFAULT].synchronize()


def median_ms(fn, runs, warmup):
  for _ in range(warmup):
    fn()
  sync()
  ms = []
  for _ in range(runs):
    t0 = time.perf_counter()
    fn()
    sync()
    ms.append((time.perf_counter() - t0) * 1e3)
  return statistics.median(ms)


# ---- the hlb-like training step (bench/hlb_step.cpp) ----
# A 2x2 whitening conv (3 -> 24, no padding), three groups of conv3x3 -
# maxpool2 - BatchNorm - GELU - conv3x3 - BatchNorm - GELU, a global max pool,
# a linear layer to 10 classes; convs have no bias. Label-smoothed (0.2)
# cross-entropy, SGD lr 0.01, nesterov momentum 0.9, weight decay 5e-4.
# Weights are tinygrad's default init, not loom's: only the time compares.
class HlbNet:
  def __init__(self, widths):
    self.whiten = nn.Conv2d(3, 24, 2, bias=False)
    self.groups = []
    cin = 24
    for w in widths:
      self.groups.append((nn.Conv2d(cin, w, 3, padding=1, bias=False), nn.BatchNorm(w),
                          nn.Conv2d(w, w, 3, padding=1, bias=False), nn.BatchNorm(w)))
      cin = w
    self.fc = nn.Linear(cin, 10)

  def __call__(self, x):
    h = self.whiten(x)
    for conv1, bn1, conv2, bn2 in self.groups:
      h = bn1(conv1(h).max_pool2d(2)).gelu(approximate="none")  # at::gelu's default: erf, not tanh
      h = bn2(conv2(h)).gelu(approximate="none")
    return self.fc(h.max(axis=(2, 3)))


def hlb_step_fn(batch, widths, size):
  net = HlbNet(widths)
  params = nn.state.get_parameters(net)  # includes the BatchNorm running stats (realized as buffers)
  opt = nn.optim.SGD(params, lr=0.01, momentum=0.9, weight_decay=5e-4, nesterov=True)
  for p in params:
    p.realize()
  x = randn(batch, 3, size, size)
  y = Tensor(rng.integers(0, 10, batch, dtype=np.int32)).realize()

  def step(x, y):
    with Context(TRAINING=1):
      opt.zero_grad()
      loss = net(x).cross_entropy(y, label_smoothing=0.2)
      loss.backward()
      opt.step()
      return loss.realize()
  return step, (x, y)


# ---- the workloads: name -> (function, its input tensors) ----
def make_workloads(small, wanted):
  n = 1 << 12 if small else 1 << 24
  side = 64 if small else 4096
  mm = {512: 16, 1024: 32, 2048: 64} if small else {512: 512, 1024: 1024, 2048: 2048}
  # conv2d 64->256 3x3, padding 1, on (64, 64, 16, 16); small: 8->16 on (2, 8, 8, 8)
  cb, ci, co, hw = (2, 8, 16, 8) if small else (64, 64, 256, 16)
  hlb_widths, hlb_size = ((8, 16, 32), 16) if small else ((64, 256, 512), 32)
  want = lambda name: not wanted or name in wanted  # noqa: E731

  work = {}
  if any(want(k) for k in ("chain", "neg", "clone")):
    a, b, c = randn(n), randn(n), randn(n)
    work["chain"] = (lambda a, b, c: ((a * b + c).relu() * 0.5).exp().sub(a).sigmoid().realize(), (a, b, c))
    work["neg"] = (lambda a: (-a).realize(), (a,))
    work["clone"] = (lambda a: a.clone().realize(), (a,))  # a copy kernel into a new buffer
  if want("sum_dim1") or want("sum_dim0") or want("sum_all"):
    sq = randn(side, side)
    work["sum_dim1"] = (lambda s: s.sum(1).realize(), (sq,))
    work["sum_dim0"] = (lambda s: s.sum(0).realize(), (sq,))
    work["sum_all"] = (lambda s: s.sum().realize(), (sq,))
  for name, m in mm.items():
    if want(f"matmul{name}"):
      work[f"matmul{name}"] = (lambda p, q: (p @ q).realize(), (randn(m, m), randn(m, m)))
  if want("conv_fwd") or want("conv_fwdbwd"):
    cx, cw, cg = randn(cb, ci, hw, hw), randn(co, ci, 3, 3), randn(cb, co, hw, hw)
    work["conv_fwd"] = (lambda x, w: x.conv2d(w, padding=1).realize(), (cx, cw))

    def conv_fwdbwd(x, w, g):
      x, w = x.detach(), w.detach()
      gx, gw = x.conv2d(w, padding=1).gradient(x, w, gradient=g)
      return Tensor.realize(gx, gw)
    work["conv_fwdbwd"] = (conv_fwdbwd, (cx, cw, cg))
  for batch in (64, 256):
    if want(f"hlb{batch}"):
      work[f"hlb{batch}"] = hlb_step_fn(batch // 16 if small else batch, hlb_widths, hlb_size)
  order = ["chain", "neg", "clone", "sum_dim1", "sum_dim0", "sum_all", "matmul512", "matmul1024", "matmul2048",
           "conv_fwd", "conv_fwdbwd", "hlb64", "hlb256"]
  return [(k, work[k]) for k in order if k in work and want(k)]


def main():
  ap = argparse.ArgumentParser(description="time loom-bench-table's workloads in tinygrad")
  ap.add_argument("--runs", type=int, default=3, help="timed calls per workload (median)")
  ap.add_argument("--small", action="store_true", help="shrink every size (a quick check, not a benchmark)")
  ap.add_argument("--jit", action="store_true", help="wrap each workload in TinyJit")
  ap.add_argument("workloads", nargs="*", help="names to run (default: all; hlb256 takes long)")
  args = ap.parse_args()
  known = {"chain", "neg", "clone", "sum_dim1", "sum_dim0", "sum_all", "matmul512", "matmul1024", "matmul2048",
           "conv_fwd", "conv_fwdbwd", "hlb64", "hlb256"}
  if unknown := [w for w in args.workloads if w not in known]:
    sys.exit(f"unknown workload(s): {' '.join(unknown)}; known: {' '.join(sorted(known))}")

  print(f"# tinygrad on {Device.DEFAULT} ({type(Device[Device.DEFAULT].renderer).__name__}), {args.runs} runs"
        f"{', TinyJit' if args.jit else ''}{', SMALL sizes' if args.small else ''}", file=sys.stderr)
  for name, (fn, inputs) in make_workloads(args.small, set(args.workloads)):
    call = TinyJit(fn) if args.jit else fn
    # warm-up: the first call compiles; TinyJit captures on its second and replays from its third
    ms = median_ms(lambda: call(*inputs), max(1, args.runs), 3 if args.jit else 2)
    print(f"tinygrad {name} {ms:.3f}", flush=True)


if __name__ == "__main__":
  main()
