"""`pip install ./python` into a fresh virtual environment, offline: the extension is built by
CMake from this checkout, and `import loom` and `python3 -m loom.run script.py` then work from
any directory, with nothing of the build tree on the path. The script's printed numbers are
compared with the same script under real torch."""
import importlib.util
import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
# ctest runs this from <build>/python; its CMakeCache gives the flags the engine was built with,
# so the package's CMake tree compiles the same commands (ccache answers them).
BUILD = pathlib.Path.cwd().parent

SCRIPT = """
import torch
torch.manual_seed(0)
w = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], requires_grad=True)
x = torch.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 4.0], [2.0, -2.0, 1.0], [0.0, 1.0, -1.0]])
y = torch.tensor([0, 1, 1, 0])
opt = torch.optim.SGD([w], lr=0.1, momentum=0.9)
for step in range(3):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(x @ w.t(), y)
    loss.backward()
    opt.step()
    print(f"{step} {loss.item():.6f}")
print(" ".join(f"{v:.6f}" for v in w.detach().flatten().tolist()))
print(torch.__version__, type(w).__module__)
"""


def _build_flags():
    cache = BUILD / "CMakeCache.txt"
    if not cache.is_file():
        return []
    wanted = ("CMAKE_BUILD_TYPE", "CMAKE_C_FLAGS_RELWITHDEBINFO", "CMAKE_CXX_FLAGS_RELWITHDEBINFO")
    flags = []
    for line in cache.read_text().splitlines():
        m = re.match(r"(\w+):\w+=(.*)", line)
        if m and m.group(1) in wanted and m.group(2):
            flags.append(f"-D{m.group(1)}={m.group(2)}")
    return flags


def _clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(extra)
    return env


def _run(cmd, cwd, env, timeout=900):
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))} failed ({r.returncode}):\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    return r.stdout


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    if any(importlib.util.find_spec(m) is None for m in ("venv", "pip", "setuptools", "wheel")):
        pytest.fail("python3-venv, python3-pip, python3-setuptools and python3-wheel are needed "
                    "(ci/install_deps.sh installs them)")
    root = tmp_path_factory.mktemp("pkg")
    env_dir = root / "venv"
    _run([sys.executable, "-m", "venv", "--system-site-packages", str(env_dir)], root, _clean_env())
    # The build tree goes under the test's build directory: a rerun rebuilds only what changed.
    cmake_dir = BUILD / "pip-package-cmake" if (BUILD / "CMakeCache.txt").is_file() else root / "cmake"
    env = _clean_env(LOOM_CMAKE_BUILD_DIR=str(cmake_dir), LOOM_CMAKE_ARGS=shlex.join(_build_flags()))
    _run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "--no-index", "--no-cache-dir", str(REPO / "python")],
         root, env)
    return env_dir


def test_import_from_anywhere_uses_the_installed_package(venv, tmp_path):
    out = _run([str(venv / "bin" / "python"), "-c", "import loom, loom._C; print(loom.__file__); print(loom._C.__file__)"],
               tmp_path, _clean_env())
    for path in out.split():
        assert pathlib.Path(path).is_relative_to(venv), f"{path} is not inside the installed environment {venv}"
        assert not pathlib.Path(path).is_relative_to(REPO)


def test_loom_run_trains_a_script_as_torch_does(venv, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    got = _run([str(venv / "bin" / "python"), "-m", "loom.run", str(script)], tmp_path, _clean_env()).split("\n")
    want = _run([sys.executable, str(script)], tmp_path, _clean_env()).split("\n")
    # it ran on loom, whose tensors the script sees as torch.Tensor, as torch's own
    assert got[-2].split()[0].endswith("+loom") and not want[-2].split()[0].endswith("+loom"), (got, want)
    assert got[-2].split()[1] == want[-2].split()[1] == "torch", (got, want)
    for g, w in zip(got[:-2], want[:-2]):
        gv, wv = [float(v) for v in g.split()], [float(v) for v in w.split()]
        assert gv == pytest.approx(wv, rel=1e-5, abs=1e-6), (g, w)
