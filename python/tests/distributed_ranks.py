"""Run under `python3 -m loom.run --nproc N` by test_distributed.py: every
collective of the shim's torch.distributed, and DistributedDataParallel's
no_sync and bucketing, checked on every rank against values numpy computes
from what each rank contributed. Prints "rank R: ok" at the end."""
import os

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

import loom

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
assert (rank, world) == (int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
assert dist.get_backend() == "gloo" and dist.is_initialized()


def local(r, dtype=np.float32, shape=(2, 3)):
    """Rank r's input."""
    return (np.arange(np.prod(shape)).reshape(shape) * (r + 1) - r).astype(dtype)


every = [local(r) for r in range(world)]


def check(got, want, what):
    np.testing.assert_array_equal(got.numpy(), want, err_msg=f"rank {rank}: {what}")


# all_reduce, in place, each op
for op, fn in [(dist.ReduceOp.SUM, np.sum), (dist.ReduceOp.MAX, np.max), (dist.ReduceOp.MIN, np.min),
               (dist.ReduceOp.PRODUCT, np.prod), (dist.ReduceOp.AVG, np.mean)]:
    t = torch.from_numpy(local(rank))
    assert dist.all_reduce(t, op=op) is None
    check(t, fn(np.stack(every), axis=0).astype(np.float32), f"all_reduce {op}")

# other dtypes: integers exactly, halves rounded once per add as torch's, bools as or
t = torch.from_numpy(local(rank, np.int64))
dist.all_reduce(t)
check(t, sum(local(r, np.int64) for r in range(world)), "all_reduce int64")
t = torch.tensor([0.5, 1.25, 3.0], dtype=torch.float16) * (rank + 1)
dist.all_reduce(t)
check(t, (np.array([0.5, 1.25, 3.0]) * sum(range(1, world + 1))).astype(np.float16), "all_reduce float16")
t = torch.tensor([rank == 0, False])
dist.all_reduce(t)
check(t, np.array([True, False]), "all_reduce bool")

# a view: the update reaches its base, as torch's in-place collectives do
base = torch.zeros(4, 3)
dist.all_reduce(base[1:3].copy_(torch.from_numpy(local(rank))))
check(base[1:3], np.sum(np.stack(every), axis=0), "all_reduce through a view")
check(base[0], np.zeros(3, np.float32), "all_reduce leaves the rest of the base")

# async: the tensor holds the result once wait() returns
t = torch.from_numpy(local(rank))
work = dist.all_reduce(t, async_op=True)
assert work.wait() is True and work.is_completed()
check(t, np.sum(np.stack(every), axis=0), "all_reduce async")

# broadcast from the last rank
t = torch.from_numpy(local(rank))
dist.broadcast(t, src=world - 1)
check(t, every[-1], "broadcast")

# all_gather into a list, and into one tensor
outs = [torch.zeros(2, 3) for _ in range(world)]
dist.all_gather(outs, torch.from_numpy(local(rank)))
for r in range(world):
    check(outs[r], every[r], f"all_gather [{r}]")
out = torch.zeros(2 * world, 3)
dist.all_gather_into_tensor(out, torch.from_numpy(local(rank)))
check(out, np.concatenate(every), "all_gather_into_tensor")

# reduce_scatter: rank r gets the sum over ranks of their block r
blocks = [torch.from_numpy(local(rank) + b) for b in range(world)]
out = torch.zeros(2, 3)
dist.reduce_scatter(out, blocks)
check(out, sum(every) + world * rank, "reduce_scatter")
out = torch.zeros(2, 3)
dist.reduce_scatter_tensor(out, torch.cat(blocks))
check(out, sum(every) + world * rank, "reduce_scatter_tensor")
dist.barrier()

# bad input raises as torch does, on every rank alike
for call, message in [(lambda: dist.broadcast(torch.zeros(2), src=world), "src"),
                      (lambda: dist.all_gather([torch.zeros(2)] * (world + 1), torch.zeros(2)), "tensors for a world"),
                      (lambda: dist.all_reduce(torch.zeros(2, dtype=torch.int64), op=dist.ReduceOp.AVG), "AVG")]:
    try:
        call()
        raise AssertionError(f"no error for {message}")
    except (ValueError, RuntimeError) as e:
        assert message in str(e), e

# DDP: different weights per rank until the wrap broadcasts rank 0's
def mlp(width):
    return nn.Sequential(nn.Linear(3, width), nn.ReLU(), nn.Linear(width, 2))


def local_grads(net, width, inputs):
    """The gradients this rank alone accumulates over `inputs`, on a copy of `net`."""
    twin = mlp(width)
    twin.load_state_dict(net.state_dict())
    for i in inputs:
        twin(i).square().sum().backward()
    return [p.grad.numpy() for p in twin.parameters()]


def check_grads(net, width, inputs):
    want = [local_grads(net, width, [i[r] for i in inputs]) for r in range(world)]
    for k, p in enumerate(net.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), sum(g[k] for g in want) / world, rtol=1e-5, atol=1e-6)


torch.manual_seed(rank)
model = mlp(4)
ddp = DistributedDataParallel(model)
gathered = [torch.zeros(12) for _ in range(world)]
dist.all_gather(gathered, model[0].weight.detach().reshape(-1))
assert all(np.array_equal(g.numpy(), gathered[0].numpy()) for g in gathered), "weights differ after the wrap"

# no_sync accumulates locally; the next synchronized backward reduces the sums, in one bucket
x = [torch.from_numpy(local(r, shape=(5, 3)) / 10) for r in range(world)]
loom.reset_run_stats()
with ddp.no_sync():
    ddp(x[rank]).square().sum().backward()
assert loom.run_stats()["collectives"] == 0, "no_sync reduced"
ddp(x[rank] * 2).square().sum().backward()
assert loom.run_stats()["collectives"] == 1, loom.run_stats()["collectives"]
check_grads(model, 4, [x, [v * 2 for v in x]])

# past torch's 1 MiB first bucket: the last layer and the first bias, then the first weight
big = mlp(90000)
ddp = DistributedDataParallel(big)
assert [len(b) for b in ddp._grad_buckets] == [3, 1], [len(b) for b in ddp._grad_buckets]
loom.reset_run_stats()
ddp(x[rank]).square().sum().backward()
assert loom.run_stats()["collectives"] == 2, loom.run_stats()["collectives"]
check_grads(big, 90000, [x])

# find_unused_parameters: a head only rank 0 uses gets the reduced gradient on every rank, one no rank
# uses keeps .grad None
class Heads(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(3, 2), nn.Linear(3, 2), nn.Linear(3, 2)

    def forward(self, x):
        return self.a(x) + (self.b(x) if rank == 0 else 0)


heads = Heads()
ddp = DistributedDataParallel(heads, find_unused_parameters=True)
ddp(x[rank]).square().sum().backward()
assert heads.c.weight.grad is None and heads.c.bias.grad is None
solo = nn.Linear(3, 2)  # b's gradient on rank 0, the only rank using it
solo.load_state_dict(heads.b.state_dict())
(solo(x[0]) + heads.a(x[0]).detach()).square().sum().backward()
np.testing.assert_allclose(heads.b.weight.grad.numpy(), solo.weight.grad.numpy() / world, rtol=1e-5, atol=1e-6)

dist.destroy_process_group()
assert not dist.is_initialized()
print(f"rank {rank}: ok", flush=True)
