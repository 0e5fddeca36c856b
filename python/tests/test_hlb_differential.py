"""Differential training: the hlb-CIFAR10 example's network, optimizer, one-cycle
schedule, label-smoothed loss and EMA (started at step 5), from the same
initial weights (made by real torch) on the same batches, trained by real
torch and by loom through the runner (examples/hlb_cifar10/differential.py):
the first 16 steps of a 500-step schedule (the warm-up of a run of a few
epochs), every loss within 1e-4 relative (the issue's bar is 1e-3) and the
same accuracy after them. Real torch convolves without oneDNN
(TORCH_MKLDNN=0): on an Intel Xeon with AVX-512 its oneDNN convolutions
differ from the im2col GEMM from step 4 (7.5e-7), and the recipe amplifies
that to 4.7e-3 by step 20 (loom's losses are the same with or without this
change). With torch's im2col path loom is within 1.6e-7 of it for 16 steps
there (and 2e-6 for 20 on an AMD EPYC); past step 16 the Intel run's
1e-7 differences grow tenfold per step (1.9e-4 at step 20).
A schedule compressed into 20 steps reaches its peak rate at step 5, where
this recipe amplifies rounding by orders of magnitude per step: real torch
against itself so perturbed ends 1e-3 (synthetic data) to 1e-2
(Fashion-MNIST) apart, so a tolerance there would test the rounding, not
the engine."""
import os
import subprocess
import sys

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "hlb_cifar10")
SCRIPT = os.path.join(EXAMPLE, "differential.py")


def test_the_first_steps_match_real_torch(tmp_path):
    data = tmp_path / "data"
    subprocess.run([sys.executable, os.path.join(EXAMPLE, "make_synthetic.py"), str(data), "--train", "1280",
                    "--test", "256"], check=True, capture_output=True)
    env = dict(os.environ, DATA=str(data), STEPS="16", SCHEDULE="500", BS="64", WIDTH="16", TORCH_MKLDNN="0")
    for cmd in ([sys.executable, SCRIPT, "export", str(tmp_path)],
                [sys.executable, "-m", "loom.run", SCRIPT, "replay", str(tmp_path)]):
        run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        assert run.returncode == 0, run.stderr[-3000:]
    compare = subprocess.run([sys.executable, SCRIPT, "compare", str(tmp_path), "--rtol", "1e-4"], env=env,
                             capture_output=True, text=True)
    print(compare.stdout)
    assert compare.returncode == 0, compare.stdout
