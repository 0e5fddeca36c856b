#!/usr/bin/env python3
"""The include rule as the linker sees it: no object file of a pipeline stage
uses a symbol that only a later stage's object files define (a function
declared by hand, or in a public header, and defined further down the
pipeline). Usage: check_symbols.py OBJECT_DIR STAGE... (the stages in order;
OBJECT_DIR/<stage>/... holds each stage's object files). Reads symbols with
gcc-nm, which also reads link-time-optimization objects."""
import os
import subprocess
import sys

STRONG = set("TDBRu")  # definitions the linker binds to (weak and local ones are not)


def symbols(path, which):
    out = subprocess.run(["gcc-nm", which, path], capture_output=True, text=True, check=True).stdout
    return [line.split()[-2:] for line in out.splitlines() if len(line.split()) >= 2]


def main():
    root, stages = sys.argv[1], sys.argv[2:]
    objects = {stage: [] for stage in stages}
    for stage in stages:
        for folder, _, files in os.walk(os.path.join(root, stage)):
            objects[stage] += [os.path.join(folder, f) for f in files if f.endswith(".o")]
    if not any(objects.values()):
        sys.exit(f"check_symbols: no object files under {root}")
    defined_in = {}
    for stage in stages:
        for path in objects[stage]:
            for kind, name in symbols(path, "--defined-only"):
                if kind in STRONG:
                    defined_in.setdefault(name, stage)
    found = []
    for i, stage in enumerate(stages):
        for path in objects[stage]:
            for _, name in symbols(path, "--undefined-only"):
                owner = defined_in.get(name)
                if owner and stages.index(owner) > i:
                    found.append((os.path.relpath(path, root), stage, owner, name))
    for path, stage, owner, name in found:
        shown = subprocess.run(["c++filt", name], capture_output=True, text=True).stdout.strip()
        print(f"check_symbols: {path} ({stage}/) uses {shown}, defined in {owner}/ (a later stage)", file=sys.stderr)
    if found:
        sys.exit(1)
    print(f"check_symbols: no stage uses a symbol of a later one "
          f"({sum(map(len, objects.values()))} object files)")


if __name__ == "__main__":
    main()
