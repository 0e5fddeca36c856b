"""The hlb-CIFAR10 example, unmodified, through the runner on synthetic data
in CIFAR-10's format: it trains (finite losses) and prints its progress line."""
import math
import os
import re
import subprocess
import sys

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "hlb_cifar10")


def test_hlb_example_trains_through_the_runner(tmp_path):
    subprocess.run([sys.executable, os.path.join(EXAMPLE, "make_synthetic.py"), str(tmp_path), "--train", "640",
                    "--test", "200"], check=True, capture_output=True)
    env = dict(os.environ, DATA=str(tmp_path), STEPS="5", BS="64", WIDTH="8", EPOCHS="1")
    run = subprocess.run([sys.executable, "-m", "loom.run", os.path.join(EXAMPLE, "train.py")], env=env,
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    line = [ln for ln in run.stdout.splitlines() if ln.startswith("epoch")][-1]
    fields = dict(re.findall(r"(train loss|val acc|step)\s+([-+0-9.naninf]+)", line))
    assert int(fields["step"]) == 5, line
    assert math.isfinite(float(fields["train loss"])), line
    assert 0.0 <= float(fields["val acc"]) <= 1.0, line
