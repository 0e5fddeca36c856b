"""Differential training: the hlb-CIFAR10 example's network, optimizer, one-cycle
schedule, label-smoothed loss and EMA (started at step 5), from the same
initial weights (made by real torch) on the same batches, trained by real
torch and by loom through the runner (examples/hlb_cifar10/differential.py):
the first 12 steps of a 500-step schedule (the warm-up of a run of a few
epochs), every loss within 1e-4 relative (the issue's bar is 1e-3) and the
same accuracy after them. Real torch runs its portable kernels: no oneDNN
(TORCH_MKLDNN=0) and no CPU-specific vector kernels
(ATEN_CPU_CAPABILITY=default); both are torch, and its machine-specific
paths differ from its portable ones by rounding, which this recipe
amplifies by orders of magnitude per step from about step 13:
- on an Intel Xeon with AVX-512, oneDNN's convolutions against the im2col
  GEMM differ from step 4 (7.5e-7) and end 4.7e-3 apart by step 20;
- on an AMD EPYC with AVX2 (no AVX-512), torch's AVX2 kernels against its
  default ones differ from step 6 (8.2e-6) and end 6.7e-3 apart by step 16,
  and initial weights exported either way move loom's and torch's step-16
  losses 7e-4 apart, while through step 12 loom is within 3e-7 of torch's
  portable kernels from either.
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
    env = dict(os.environ, DATA=str(data), STEPS="12", SCHEDULE="500", BS="64", WIDTH="16", TORCH_MKLDNN="0",
               ATEN_CPU_CAPABILITY="default")
    for cmd in ([sys.executable, SCRIPT, "export", str(tmp_path)],
                [sys.executable, "-m", "loom.run", SCRIPT, "replay", str(tmp_path)]):
        run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        assert run.returncode == 0, run.stderr[-3000:]
    compare = subprocess.run([sys.executable, SCRIPT, "compare", str(tmp_path), "--rtol", "1e-4"], env=env,
                             capture_output=True, text=True)
    print(compare.stdout)
    assert compare.returncode == 0, compare.stdout
