"""Where a step's kernel time goes, from a LOOM_DEBUG=2 log.

    LOOM_DEBUG=2 ... python3 bench/gpu_table.py --runs 1 hlb1024h > LOG 2>&1
    python3 bench/kernel_profile.py LOG [--top 12]

LOOM_DEBUG=2 waits for each kernel and prints a `  kernel NAME ... T ms` line,
then a `realize: N kernels, ...` line closing each realize. This takes the
last realize with the most kernels but one (the timed call of a workload
whose first call, the warm-up, compiled: the same graph, cached) and prints
its kernel milliseconds by kind (the name's prefix: gemm, pack, r, E, ...) and
its slowest kernels.
"""
import argparse
import collections
import re
import sys

KERNEL = re.compile(r"^  kernel (\S+)\s.*?\s([0-9.]+) ms")
REALIZE = re.compile(r"^realize: (\d+) kernels?")


def realizes(lines):
    """Each realize's kernels: [(name, ms), ...] in the order run."""
    out, current = [], []
    for line in lines:
        if m := KERNEL.match(line):
            current.append((m.group(1), float(m.group(2))))
        elif REALIZE.match(line):
            out.append(current)
            current = []
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args()
    with open(args.log) as f:
        steps = realizes(f.read().splitlines())
    if not steps:
        sys.exit(f"kernel_profile: no LOOM_DEBUG=2 realize in {args.log}")
    most = max(len(s) for s in steps)
    step = [s for s in steps if len(s) >= most - 10][-1]  # the timed call's realize (the warm-up's has a few more)
    total = sum(ms for _, ms in step)
    kinds = collections.Counter()
    for name, ms in step:
        kinds[name.split("_")[0]] += ms
    print(f"kernel_profile: {len(step)} kernels, {total:.3f} ms")
    for kind, ms in kinds.most_common():
        print(f"  {kind:8s} {ms:9.3f} ms  {100 * ms / total:5.1f}%")
    print("slowest:")
    for name, ms in sorted(step, key=lambda k: -k[1])[:args.top]:
        print(f"  {ms:9.3f} ms  {name}")


if __name__ == "__main__":
    main()
