"""Reads a process-replay snapshot (replay/snapshots/*.txt, written by
loom-replay): a program's kernels, each with its AST, linear program, C and
CUDA source."""
import os


def read_snapshot(path):
    """{"name", "program", "kernels": [{"title", "sections": [[name, text], ...]}]}"""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    snap = {"name": os.path.basename(path), "program": "", "kernels": []}
    section = None
    for line in lines:
        if line.startswith("# program "):
            snap["program"] = line[len("# program "):]
        elif line.startswith("=== kernel "):
            snap["kernels"].append({"title": line[len("=== kernel "):], "sections": []})
            section = None
        elif line.startswith("--- ") and snap["kernels"]:
            section = [line[4:], []]
            snap["kernels"][-1]["sections"].append(section)
        elif section is not None:
            section[1].append(line)
    if not snap["program"] and not snap["kernels"]:
        raise ValueError(f"{path} is not a process-replay snapshot (no '# program' line, no kernels)")
    for k in snap["kernels"]:
        for s in k["sections"]:
            while s[1] and not s[1][-1]:
                s[1].pop()
            s[1] = "\n".join(s[1])
    return snap
