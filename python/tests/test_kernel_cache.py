"""The CPU kernels' disk cache across machines: its key holds the instruction
sets the kernels' -march resolves to, not the flag's text."""
import os
import shutil
import subprocess
import sys

import pytest

RUN = """
import loom
x = loom.tensor([1.0, 2.0, 3.0], dtype=loom.float64)
(x.sin() * 2).numpy()
print(loom.run_stats()["kernels_compiled"])
"""


def compiled(env):
    run = subprocess.run([sys.executable, "-c", RUN], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return int(run.stdout.split()[-1])


def has_avx512():
    with open("/proc/cpuinfo") as f:
        return " avx512f" in f.read()


@pytest.mark.skipif(not shutil.which("cc") or os.uname().machine != "x86_64" or not has_avx512(),
                    reason="needs cc on an x86-64 machine with AVX-512")
def test_native_on_a_machine_without_avx512_misses_the_cache_of_one_with_it(tmp_path):
    """The same -march=native on another kind of machine: a `cc` first on
    PATH that turns AVX-512 off stands for a compiler whose native has none.
    The cache filled on this machine must miss there, and hit again here."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "cc").write_text(f'#!/bin/sh\nexec {shutil.which("cc")} "$@" -mno-avx512f\n')
    (fake / "cc").chmod(0o755)
    env = dict(os.environ, LOOM_CACHE_DIR=str(tmp_path / "cache"), LOOM_MARCH="native")
    other = dict(env, PATH=f"{fake}:{env['PATH']}")
    assert compiled(env) == 1  # an empty cache
    assert compiled(env) == 0  # the same machine hits
    assert compiled(other) == 1  # the other kind of machine compiles its own
    assert compiled(env) == 0
    assert compiled(other) == 0
