"""python3 -m loom.run: an unmodified PyTorch script runs on the shim, while
real torch stays what `import torch` gives every other process."""
import math
import os
import re
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent('''
    import sys
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(8, 16, 3, padding=1), nn.GELU(), nn.AdaptiveMaxPool2d((1, 1)), nn.Flatten(),
                        nn.Linear(16, 10)).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=3, anneal_strategy="linear",
                                                cycle_momentum=False)
    data = TensorDataset(torch.randn(12, 3, 8, 8), torch.randint(0, 10, (12,)))
    for step, (x, y) in enumerate(DataLoader(data, batch_size=4, shuffle=True, drop_last=True)):
        loss = F.cross_entropy(net(x.to(device)), y.to(device), label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        print(f"step {step} loss {loss.item():.6f}")
    print("torch is", torch.__version__, sys.argv[1:])
''')


def _env():
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "2")
    return env


def test_runner_runs_an_unmodified_torch_script(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    run = subprocess.run([sys.executable, "-m", "loom.run", str(script), "--flag", "1"], capture_output=True,
                         text=True, env=_env(), timeout=600)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    losses = [float(line.split()[-1]) for line in lines if line.startswith("step ")]
    assert len(losses) == 3 and all(math.isfinite(v) and 0 < v < 10 for v in losses), run.stdout
    assert lines[-1] == "torch is 1.13.1+loom ['--flag', '1']"


def test_runner_prints_the_engines_counters_with_stats(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    run = subprocess.run([sys.executable, "-m", "loom.run", "--stats", str(script)], capture_output=True, text=True,
                         env=_env(), timeout=600)
    assert run.returncode == 0, run.stderr
    counts = re.search(r"loom: (\d+) kernels run, (\d+) compiled, (\d+) schedules \((\d+) from the cache\)",
                       run.stderr)
    assert counts, run.stderr
    kernels, _, schedules, hits = (int(g) for g in counts.groups())
    assert kernels > 0 and schedules > 0 and hits <= schedules


def test_runner_reports_unsupported_modules_and_leaves_other_processes_alone(tmp_path):
    script = tmp_path / "fft.py"
    script.write_text("import torch.fft\n")
    run = subprocess.run([sys.executable, "-m", "loom.run", str(script)], capture_output=True, text=True,
                         env=_env(), timeout=120)
    assert run.returncode != 0 and "torch.fft is not supported by loom" in run.stderr
    real = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__, torch.__file__)"],
                          capture_output=True, text=True, env=_env(), timeout=120)
    assert real.returncode == 0 and "loom" not in real.stdout, real.stdout


def test_shim_modules_are_one_object_under_both_names(tmp_path):
    script = tmp_path / "names.py"
    script.write_text("import sys, torch, torch.nn, torchvision\n"
                      "import loom.shim.torch.nn as shim_nn\n"
                      "assert torch.nn is shim_nn and sys.modules['torch.nn'] is shim_nn\n"
                      "assert torch.nn.Module is shim_nn.Module\n"
                      "print('ok')\n")
    run = subprocess.run([sys.executable, "-m", "loom.run", str(script)], capture_output=True, text=True,
                         env=_env(), timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr
