"""The unmodified upstream hlb-CIFAR10 main.py, trained by PyTorch and by loom on the same machine.

    LOOM_DEVICE=CUDA PYTHONPATH=build/python python3 bench/hlb_upstream.py /path/to/main.py --data DIR \\
        [--epochs 3.5] [--batch 1024] [--width 64] [--kernels] [--profile FILE]

Runs examples/hlb_cifar10/run_upstream.py twice, under real torch and under
loom's runner (LOOM_DEBUG=1, which adds no synchronization), and reads
main.py's own table: its cumulative training time per epoch. A steady step is
the fastest full epoch after the first (which compiles, or warms cuDNN) over
its steps. Prints both, their ratio, and loom's schedule-cache hits over the
run. --kernels adds a third run at LOOM_DEBUG=2 (each kernel waited for and
timed) whose kernel time per step is set against the plain run's step: the
share of a step the device computes. DIR holds CIFAR-10's python format
(examples/hlb_cifar10/make_synthetic.py); 10 240 training images at batch
1024 make the 10-step epochs of the figures in bench/RESULTS.md.
"""
import argparse
import os
import pathlib
import pstats
import re
import statistics
import subprocess
import sys

RUN = pathlib.Path(__file__).resolve().parents[1] / "examples" / "hlb_cifar10" / "run_upstream.py"


def run(args, loom, debug=0, profile=None):
    """stdout and stderr of one run, in the order written (table rows, LOOM_DEBUG lines); `profile`: a
    file for cProfile's statistics of the whole run."""
    cmd = [sys.executable] + (["-m", "cProfile", "-o", profile] if profile else []) + \
        (["-m", "loom.run"] if loom else []) + [str(RUN), os.path.abspath(args.main_py), "--data", args.data, "--epochs", str(args.epochs),
        "--batch", str(args.batch), "--width", str(args.width)]
    env = dict(os.environ, PYTHONUNBUFFERED="1", **({"LOOM_DEBUG": str(debug)} if loom else {}))
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode:
        sys.exit(f"hlb_upstream: {'loom' if loom else 'torch'} failed:\n{p.stdout[-4000:]}")
    return p.stdout


def epochs(out):
    """main.py's table: cumulative training seconds after each epoch; and the steps of a full epoch."""
    times = [float(row.split("|")[-2]) for row in out.splitlines() if re.match(r"\|\s+\d+\s+\|", row)]
    steps = int(re.search(r"steps per epoch (\d+)", out).group(1))
    return times, steps


def steady_ms(times, steps, full):
    """The fastest full epoch after the first, per step."""
    lengths = [b - a for a, b in zip(times, times[1:])][:full - 1]
    if not lengths:
        sys.exit("hlb_upstream: --epochs must give at least two full epochs")
    return min(lengths) / steps * 1e3


def kernel_ms_per_step(out):
    """LOOM_DEBUG=2: the kernel milliseconds from one training step's realize to the next (the realizes of
    the most kernels that repeat), the median over the run's steady steps."""
    realizes = [(i, int(m.group(1))) for i, line in enumerate(out.splitlines())
                if (m := re.match(r"realize: (\d+) kernels?, .*schedule cache hit", line))]
    if not realizes:
        return None
    most = max(n for _, n in realizes)
    steps = [i for i, n in realizes if n >= most - 2]  # a step's realize (one kernel fewer once the EMA starts)
    lines, sums = out.splitlines(), []
    for a, b in zip(steps, steps[1:]):
        sums.append(sum(float(line.split(" ms ")[0].split()[-1]) for line in lines[a + 1:b + 1]
                        if line.startswith("  kernel ") and " ms " in line))
    return statistics.median(sums) if sums else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("main_py")
    ap.add_argument("--data", required=True)
    ap.add_argument("--epochs", type=float, default=3.5)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--kernels", action="store_true")
    ap.add_argument("--profile", metavar="FILE", help="also run loom under cProfile, writing FILE and printing "
                    "the 30 functions of most own time (loom's C++ entry points among them)")
    args = ap.parse_args()
    full = int(args.epochs)
    t_out, l_out = run(args, loom=False), run(args, loom=True, debug=1)
    (t_times, steps), (l_times, _) = epochs(t_out), epochs(l_out)
    torch_ms, loom_ms = steady_ms(t_times, steps, full), steady_ms(l_times, steps, full)
    hits, misses = l_out.count("schedule cache hit"), l_out.count("schedule cache miss")
    print(f"hlb_upstream: batch {args.batch}, width {args.width}, {steps} steps an epoch, device {os.environ.get('LOOM_DEVICE', 'CPU')}")
    print(f"torch: {torch_ms:.2f} ms a steady step (epochs end at {', '.join(f'{t:.3f}' for t in t_times)} s)")
    print(f"loom:  {loom_ms:.2f} ms a steady step (epochs end at {', '.join(f'{t:.3f}' for t in l_times)} s)")
    print(f"loom / torch: {loom_ms / torch_ms:.1f}x")
    print(f"loom schedule cache: {hits} hits of {hits + misses} realizes ({100 * hits / max(1, hits + misses):.0f}%)")
    if args.kernels:
        k = kernel_ms_per_step(run(args, loom=True, debug=2))
        if k is None:
            print("loom kernels: no repeated training-step realize found")
        else:
            print(f"loom kernels: {k:.2f} ms a step (LOOM_DEBUG=2, median of the steady steps), "
                  f"{100 * k / loom_ms:.0f}% of the steady step")
    if args.profile:
        run(args, loom=True, profile=args.profile)
        pstats.Stats(args.profile).sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main()
