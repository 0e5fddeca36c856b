"""torch.nn.parallel.DistributedDataParallel on loom's process group.

At wrap, rank 0's parameters and buffers are broadcast to every rank. A
forward with grad mode on (outside no_sync()) broadcasts rank 0's buffers
when broadcast_buffers, and queues the gradient reduction to run when the
next backward ends (loom._C.queue_callback, torch's
Variable._execution_engine.queue_callback). The reduction goes bucket by
bucket, parameters in reverse order as torch assigns them (the first bucket
up to 1 MiB, the others up to bucket_cap_mb): each bucket's gradients are
flattened, divided by the world size and summed over the ranks, all buckets
in flight at once, then each .grad takes its part. A gradient a rank lacks
counts as zeros; with find_unused_parameters, a parameter no rank used
keeps .grad None, as torch's (which ranks used which parameter travels in
the gradients' all_reduce; without it torch raises at the next forward,
and loom gives such a parameter the reduced zeros). loom's backward realizes every gradient in one schedule, so
the reductions start when it ends: none overlaps the backward's kernels."""
import contextlib

import loom as _loom
from loom import _C
from loom.shim import unsupported
from ..module import Module
from ... import distributed as dist

_FIRST_BUCKET_BYTES = 1024 * 1024  # torch's dist._DEFAULT_FIRST_BUCKET_BYTES


def _buckets(tensors, first_cap, cap):
    """torch's bucket assignment: per dtype, tensors join the open bucket
    until it holds at least its limit (`first_cap` for a dtype's first
    bucket, `cap` after), then it closes; buckets in the order of their first
    tensor."""
    done, open_, limit = [], {}, {}
    for t in tensors:
        bucket = open_.setdefault(t.dtype, [[], 0])
        bucket[0].append(t)
        bucket[1] += t.numel() * t.element_size()
        if bucket[1] >= limit.get(t.dtype, first_cap):
            done.append(open_.pop(t.dtype)[0])
            limit[t.dtype] = cap
    done += [b[0] for b in open_.values()]
    position = {id(t): i for i, t in enumerate(tensors)}
    return sorted(done, key=lambda b: position[id(b[0])])


def _flat(tensors):
    return _loom.cat([t.detach().reshape(-1) for t in tensors])


def _pieces(flat, tensors):
    """flat's consecutive parts shaped as `tensors`."""
    at = 0
    for t in tensors:
        n = t.numel()
        yield flat[at:at + n].reshape(t.shape)
        at += n


class DistributedDataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=25, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False):
        super().__init__()
        if not dist.is_initialized():
            raise RuntimeError("Default process group has not been initialized, please make sure to call "
                               "init_process_group.")
        dist._check_group(process_group, "DistributedDataParallel")
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        if dim != 0:
            raise NotImplementedError("DistributedDataParallel(dim != 0) is not supported by loom")
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter that "
                               "requires a gradient.")
        self.module = module
        self.device_ids, self.output_device, self.dim = device_ids, output_device, dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters, self.static_graph = find_unused_parameters, static_graph
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.bucket_bytes_cap = int(bucket_cap_mb * 1024 * 1024)
        self.require_backward_grad_sync = True
        object.__setattr__(self, "_params", params)
        object.__setattr__(self, "_grad_buckets", _buckets(params[::-1], _FIRST_BUCKET_BYTES, self.bucket_bytes_cap))
        object.__setattr__(self, "_queued", False)
        self._broadcast(list(module.parameters()) + list(module.buffers()))

    def _broadcast(self, tensors):
        """Rank 0's values into `tensors`, one collective per bucket."""
        if dist.get_world_size() == 1 or not tensors:
            return
        with _loom.no_grad():
            for bucket in _buckets(tensors, self.bucket_bytes_cap, self.bucket_bytes_cap):
                flat = _C.distributed.broadcast(_flat(bucket), 0).wait()
                if dist.get_rank() != 0:
                    for t, value in zip(bucket, _pieces(flat, bucket)):
                        t.copy_(value)

    def forward(self, *inputs, **kwargs):
        if _loom.is_grad_enabled() and self.require_backward_grad_sync:
            if self.broadcast_buffers:
                self._broadcast(list(self.module.buffers()))
            if not self._queued:
                object.__setattr__(self, "_queued", True)
                _C.queue_callback(self._reduce_gradients)
        return self.module(*inputs, **kwargs)

    def _reduce_gradients(self):
        object.__setattr__(self, "_queued", False)
        world = dist.get_world_size()
        if world == 1:
            return
        with _loom.no_grad():
            works = []
            for bucket in self._grad_buckets:
                parts = [p.grad if p.grad is not None else _loom.zeros_like(p) for p in bucket]
                if self.find_unused_parameters:  # which ranks used each parameter, summed with the gradients
                    parts.append(_loom.tensor([float(p.grad is not None) for p in bucket], dtype=bucket[0].dtype))
                flat = _flat(parts) / world
                works.append((bucket, _C.distributed.all_reduce(flat, dist.ReduceOp.SUM, True)))
            for bucket, work in works:
                flat = work.wait()
                used = [True] * len(bucket)
                if self.find_unused_parameters:
                    used = [u > 0 for u in flat[-len(bucket):].tolist()]
                for p, g, u in zip(bucket, _pieces(flat, bucket), used):
                    if u:
                        self._set_grad(p, g)

    @staticmethod
    def _set_grad(p, g):
        if p.grad is None:
            p.grad = g.clone()
        else:
            p.grad.copy_(g)

    @contextlib.contextmanager
    def no_sync(self):
        """Backwards inside accumulate .grad locally; the first synchronized one after reduces the sums."""
        before = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = before


__getattr__ = unsupported(__name__)
