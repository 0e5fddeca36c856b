#!/usr/bin/env python3
"""The timing report at the end of ci/test.sh: the wall time of each phase
(ci/timing.sh writes them), ctest's tests per label (count and summed test
time: the tests of a label overlap with others under -j2, so a label has no
wall time of its own), and the slowest tests.

usage: ci/timing_report.py PHASES_TSV [CTEST_JUNIT_XML BUILD_DIR] [--total SECONDS]
"""
import collections
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

SLOWEST = 15


def phases(path):
    rows = []
    try:
        with open(path) as f:
            for line in f:
                name, _, secs = line.rstrip("\n").partition("\t")
                if secs:
                    rows.append((name, float(secs)))
    except OSError:
        pass
    return rows


def test_labels(build_dir):
    try:
        out = subprocess.run(["ctest", "--test-dir", build_dir, "--show-only=json-v1"],
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    labels = {}
    for t in json.loads(out).get("tests", []):
        for p in t.get("properties", []):
            if p.get("name") == "LABELS":
                labels[t["name"]] = p["value"]
    return labels


def tests(junit):
    """(name, seconds, status, gtest tests it ran, fuzz listings it replayed) per ctest test."""
    try:
        root = ET.parse(junit).getroot()
    except (OSError, ET.ParseError):
        return []
    out = []
    for c in root.iter("testcase"):
        text = c.findtext("system-out") or ""
        ran = sum(int(n) for n in re.findall(r"^\[==========\] (\d+) tests? from \d+ test suites? ran", text, re.M))
        replayed = sum(int(n) for n in re.findall(r"^replay: \d+ of (\d+) listings pass", text, re.M))
        out.append((c.get("name"), float(c.get("time") or 0), c.get("status") or "", ran, replayed))
    return out


def main(argv):
    total = None
    if "--total" in argv:
        i = argv.index("--total")
        total = float(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    print("\n== timing report ==")
    rows = phases(argv[0])
    width = max([len(n) for n, _ in rows] + [len("total")])
    for name, secs in rows:
        print(f"  {name:<{width}}  {secs:8.1f} s")
    if total is not None:
        print(f"  {'total':<{width}}  {total:8.1f} s  (wall time of ci/test.sh)")
    if len(argv) < 3:
        return 0
    ran = tests(argv[1])
    if not ran:
        print("  (no ctest results)")
        return 0
    labels = test_labels(argv[2])
    per_label = collections.defaultdict(lambda: [0, 0.0])
    for name, secs, *_ in ran:
        for label in labels.get(name, ["(no label)"]):
            per_label[label][0] += 1
            per_label[label][1] += secs
    print(f"  ctest: {len(ran)} tests, {sum(r[1] for r in ran):.1f} s of test time in all (a test with"
          f" several labels counts under each); {sum(r[3] for r in ran)} GoogleTest tests and"
          f" {sum(r[4] for r in ran)} fuzz regression listings ran inside them")
    for label, (n, secs) in sorted(per_label.items(), key=lambda kv: -kv[1][1]):
        print(f"    label {label:<12} {n:5d} tests  {secs:8.1f} s")
    print(f"  the {SLOWEST} slowest tests:")
    for name, secs, status, *_ in sorted(ran, key=lambda r: -r[1])[:SLOWEST]:
        shown = name.split("  #")[0]  # gtest's "  # GetParam() = ..." suffix
        print(f"    {secs:8.1f} s  {shown}{'' if status == 'run' else '  (' + status + ')'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
