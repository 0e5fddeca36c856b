"""torch.distributed and DistributedDataParallel under the shim, in real
processes: Open MPI's mpirun starts them (python3 -m loom.run --nproc N).

The differential: examples/ddp/train.py, a small conv net with BatchNorm
trained 20 steps by 2 processes from the same initial weights (rank 0's,
which DDP broadcasts at wrap; rank 1 starts from its own) on the same
batches, under real torch's DDP (gloo) and under loom's (Open MPI). Every
step's loss on each rank, and the loss averaged with all_reduce, within
1e-4 relative (the training differential's bar, test_hlb_differential.py),
the final states within 1e-4, and each engine's ranks holding identical
parameters. Real torch runs its portable kernels, as in that test."""
import json
import os
import re
import socket
import subprocess
import sys

import numpy as np
import pytest
import torch

import loom

HERE = os.path.dirname(__file__)
TRAIN = os.path.join(HERE, "..", "..", "examples", "ddp", "train.py")
# The MPI backend reduces CPU tensors: the ranks compute on the CPU whatever
# device this process was given (the NCCL test below asks for the GPU).
ENV = dict(os.environ, LOOM_DEVICE="CPU")
TORCH_ENV = dict(ENV, TORCH_MKLDNN="0", ATEN_CPU_CAPABILITY="default", OMP_NUM_THREADS="1")


def loom_run(args, env=None, timeout=600):
    return subprocess.run([sys.executable, "-m", "loom.run"] + args, env=env or ENV, capture_output=True,
                          text=True, timeout=timeout)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torch_ranks(nproc, args, env):
    """Real torch's processes, started as torchrun starts them (RANK, WORLD_SIZE, MASTER_*)."""
    port = str(free_port())
    procs = [subprocess.Popen([sys.executable] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=dict(env, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(nproc),
                                       MASTER_ADDR="127.0.0.1", MASTER_PORT=port))
             for r in range(nproc)]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), "\n".join(outs)[-3000:]


def test_every_collective_and_ddp_bucket_on_two_ranks():
    run = loom_run(["--nproc", "2", os.path.join(HERE, "distributed_ranks.py")])
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    # the ranks' lines may interleave in mpirun's output
    assert sorted(re.findall(r"rank (\d+): ok", run.stdout)) == ["0", "1"], run.stdout


def test_ddp_training_matches_real_torch_ddp(tmp_path):
    subprocess.run([sys.executable, TRAIN, "init", str(tmp_path)], check=True, env=TORCH_ENV)
    torch_ranks(2, [TRAIN, "run", str(tmp_path)], dict(TORCH_ENV, TAG="torch"))
    run = loom_run(["--nproc", "2", TRAIN, "run", str(tmp_path)], env=dict(ENV, TAG="loom"))
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    rows = []
    for rank in (0, 1):
        want = json.load(open(tmp_path / f"torch-rank{rank}.json"))
        got = json.load(open(tmp_path / f"loom-rank{rank}.json"))
        assert got["world"] == want["world"] == 2
        assert len(got["losses"]) == len(want["losses"]) == 20
        for key in ("losses", "mean_losses"):
            np.testing.assert_allclose(got[key], want[key], rtol=1e-4, err_msg=f"rank {rank} {key}")
        rows.append((got["losses"], want["losses"]))
        w_want, w_got = np.load(tmp_path / f"torch-rank{rank}.npz"), np.load(tmp_path / f"loom-rank{rank}.npz")
        assert sorted(w_got.files) == sorted(w_want.files)
        for k in w_want.files:
            np.testing.assert_allclose(w_got[k], w_want[k], rtol=1e-4, atol=1e-6, err_msg=f"rank {rank} {k}")
    for tag in ("torch", "loom"):
        w0, w1 = np.load(tmp_path / f"{tag}-rank0.npz"), np.load(tmp_path / f"{tag}-rank1.npz")
        # the running statistics are each rank's own (DDP broadcasts rank 0's before each forward)
        for k in w0.files:
            if "running_" not in k:
                np.testing.assert_array_equal(w0[k], w1[k], err_msg=f"{tag}: ranks differ in {k}")
    print("step  rank0 loom / torch          rank1 loom / torch")
    for s in range(20):
        print(f"{s + 1:4d}  {rows[0][0][s]:.7f} / {rows[0][1][s]:.7f}  {rows[1][0][s]:.7f} / {rows[1][1][s]:.7f}")


def test_distributed_sampler_deals_as_torch_does():
    from torch.utils.data.distributed import DistributedSampler as Real

    from loom.shim.torch.utils.data.distributed import DistributedSampler as Ours
    for n, replicas, drop_last in [(10, 3, False), (10, 3, True), (2, 3, False), (12, 4, False), (7, 2, True)]:
        data = list(range(n))
        for rank in range(replicas):
            want = Real(data, num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last)
            got = Ours(data, num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last)
            assert list(got) == list(want) and len(got) == len(want), (n, replicas, rank, drop_last)
    # shuffled: loom's generator, so loom's order; still a partition of one padded permutation, new per epoch
    shares = [Ours(list(range(10)), num_replicas=3, rank=r, seed=7) for r in range(3)]
    first = [list(s) for s in shares]
    padded = [first[r][i] for i in range(4) for r in range(3)]  # rank r holds every third from r
    assert sorted(padded[:10]) == list(range(10)) and padded[10:] == padded[:2]
    assert [list(s) for s in shares] == first  # the same epoch, the same order
    for s in shares:
        s.set_epoch(1)
    assert [list(s) for s in shares] != first
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
        Ours(list(range(10)), num_replicas=3, rank=3)


def one_process(code, env=None):
    return subprocess.run([sys.executable, "-c", "import loom.run; loom.run.install(); import torch\n" + code],
                          env=env or ENV, capture_output=True, text=True, timeout=120)


def test_errors_name_what_is_wrong():
    run = one_process("import torch.distributed as d\nassert d.get_rank() == -1 and not d.is_initialized()\n"
                      "d.all_reduce(torch.ones(2))")
    assert "Default process group has not been initialized" in run.stderr
    run = one_process("import torch.distributed as d\nd.init_process_group('tcpip')")
    assert "Invalid backend: 'tcpip'" in run.stderr
    # torchrun's word against Open MPI's: a process started alone is a world of one
    run = one_process("import torch.distributed as d\nd.init_process_group('gloo')",
                      env=dict(ENV, WORLD_SIZE="2", RANK="1"))
    assert "the launcher says WORLD_SIZE=2 but mpi finds 1" in run.stderr and "--nproc" in run.stderr
    run = one_process("import torch.distributed as d\nd.init_process_group('gloo')\nd.init_process_group('gloo')")
    assert "trying to initialize the default process group twice" in run.stderr
    run = loom_run(["--nproc", "0", "x.py"])
    assert run.returncode == 2 and "positive number of processes" in run.stderr


def test_a_world_of_one_and_rank_variables():
    """A process started alone is rank 0 of 1; under loom.run --nproc, torchrun's variables are set."""
    run = one_process("import torch.distributed as d\nd.init_process_group()\nt = torch.ones(3)\n"
                      "d.all_reduce(t)\nprint(d.get_world_size(), d.get_rank(), d.get_backend(), t.tolist())")
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["1", "0", "mpi", "[1.0,", "1.0,", "1.0]"]


def test_nccl_on_a_gpu():
    """NCCL's all_reduce in a world of one on the GPU; needs libnccl.so.2 and a GPU."""
    why = loom._C.distributed.missing("nccl")
    if why:
        pytest.skip(why)
    code = ("import torch.distributed as d\nd.init_process_group('nccl')\nt = torch.arange(4.0, device='cuda')\n"
            "d.all_reduce(t)\nprint(t.cpu().tolist())")
    run = one_process(code, env=dict(ENV, LOOM_DEVICE="CUDA"))
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[0.0, 1.0, 2.0, 3.0]"
