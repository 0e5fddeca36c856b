"""One rank of bench/allreduce/run.py: all_reduce (sum) of MIB mebibytes of
float32, WARMUP untimed calls, then ITERS timed calls between barriers;
rank 0 prints the mean seconds per call of each way. Runs under real torch
(gloo, started with RANK/WORLD_SIZE/MASTER_*) or under loom.run (Open MPI;
then also loom's collective alone, without torch's in-place copy back, and
NCCL on the GPU when the process computes there)."""
import sys
import time

import torch
import torch.distributed as dist

mib, iters = int(sys.argv[1]), int(sys.argv[2])
backend = "nccl" if torch.cuda.is_available() else "gloo"
dist.init_process_group(backend)
device = "cuda" if backend == "nccl" else "cpu"
x = torch.ones(mib * 1024 * 1024 // 4, device=device) * (dist.get_rank() + 1)


def timed(step):
    for _ in range(2):
        step()
    dist.barrier()
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        step()
    if device == "cuda":
        torch.cuda.synchronize()
    dist.barrier()
    return (time.perf_counter() - start) / iters


rows = [("torch.distributed.all_reduce", timed(lambda: dist.all_reduce(x)))]
if "+loom" in torch.__version__:
    from loom import _C
    rows.append(("loom's collective alone", timed(lambda: _C.distributed.all_reduce(x).wait())))
if dist.get_rank() == 0:
    for name, seconds in rows:
        print(f"{name}\t{seconds:.6f}")
dist.destroy_process_group()
