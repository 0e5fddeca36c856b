"""torch.distributed on loom: the default process group (loom/distributed.h).

torch's backends map onto the two loom has: "gloo" and "mpi" reduce CPU
tensors through Open MPI, "nccl" CUDA tensors through NCCL. The processes
are started and joined by Open MPI's launcher (`mpirun -n N`, or
`python3 -m loom.run --nproc N script.py`, which calls it and sets
torchrun's RANK, WORLD_SIZE and LOCAL_RANK for the script); WORLD_SIZE and
RANK, from torchrun or init_process_group's arguments, must agree with it.
Only the default group (group.WORLD) exists. A collective returns once it is
done (the tensors hold their new values), or with async_op=True a Work whose
wait() puts them there."""
import datetime
import os

import loom as _loom
from loom import _C
from loom.shim import unsupported

_d = _C.distributed
ReduceOp = _d.ReduceOp
_BACKENDS = {"gloo": "mpi", "mpi": "mpi", "nccl": "nccl"}
_asked = None  # the backend name the script asked for, which get_backend returns


class Backend(str):
    """torch.distributed.Backend: the names init_process_group takes."""
    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend name must be a string, but got: {name}")
        value = name.lower()
        if value not in _BACKENDS:
            raise ValueError(f"Invalid backend: '{name}' (loom has {', '.join(sorted(_BACKENDS))})")
        return str.__new__(cls, value)


class _World:
    def __repr__(self):
        return "<torch.distributed group.WORLD>"


class group:
    WORLD = _World()


GroupMember = group
default_pg_timeout = datetime.timedelta(minutes=30)


def is_available():
    return True


def is_mpi_available():
    return _d.missing("mpi") == ""


def is_gloo_available():
    """gloo's part (CPU tensors) is Open MPI's here."""
    return is_mpi_available()


def is_nccl_available():
    return _d.missing("nccl") == ""


def is_initialized():
    return _d.is_initialized()


def is_torchelastic_launched():
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def _backend_for(backend):
    if backend is None:
        return "nccl" if _C.device() == "cuda" else "mpi"
    if isinstance(backend, str) and "," in backend:  # "cpu:gloo,cuda:nccl"
        pairs = dict(part.split(":", 1) for part in backend.split(","))
        backend = pairs.get(_C.device(), next(iter(pairs.values())))
    return _BACKENDS[Backend(backend)]


def _env_int(name):
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else -1


def init_process_group(backend=None, init_method=None, timeout=default_pg_timeout, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None):
    """Joins the job. The rendezvous is Open MPI's launcher's, whatever
    init_method says; WORLD_SIZE and RANK (the arguments, else torchrun's
    environment variables) are checked against it."""
    global _asked
    if store is not None:
        raise NotImplementedError("torch.distributed.init_process_group(store=...) is not supported by loom: "
                                  "processes join through Open MPI's launcher")
    if init_method in (None, "env://"):
        world_size = world_size if world_size != -1 else _env_int("WORLD_SIZE")
        rank = rank if rank != -1 else _env_int("RANK")
    name = _backend_for(backend)
    _d.init(name, world_size, rank)
    _asked = str(Backend(backend)) if isinstance(backend, str) and "," not in backend else name


def destroy_process_group(group=None):
    global _asked
    _check_group(group, "destroy_process_group")
    _d.destroy()
    _asked = None


def _check_group(g, what):
    if g is not None and g is not group.WORLD:
        raise NotImplementedError(f"torch.distributed.{what}: loom has only the default group (group.WORLD)")


def get_rank(group=None):
    _check_group(group, "get_rank")
    return _d.get_rank() if _d.is_initialized() else -1


def get_world_size(group=None):
    _check_group(group, "get_world_size")
    return _d.get_world_size() if _d.is_initialized() else -1


def get_backend(group=None):
    _check_group(group, "get_backend")
    _d.get_backend()  # raises when not initialized
    return _asked


class Work:
    """What a collective with async_op=True returns: wait() puts the result
    into the collective's tensors."""

    def __init__(self, work, finish):
        self._work, self._finish, self._done = work, finish, False

    def _complete(self, result):
        if not self._done:
            self._done = True
            with _loom.no_grad():
                self._finish(result)

    def wait(self, timeout=None):
        self._complete(self._work.wait())
        return True

    def is_completed(self):
        if self._work.is_completed():
            self._complete(self._work.wait())
        return self._done

    def is_success(self):
        return self.is_completed()


class _Finished:
    def wait(self):
        return None

    def is_completed(self):
        return True


def _run(work, finish, async_op):
    w = Work(work, finish)
    if async_op:
        return w
    w.wait()
    return None


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    _check_group(group, "all_reduce")
    return _run(_d.all_reduce(tensor, op, async_op), tensor.copy_, async_op)


def broadcast(tensor, src, group=None, async_op=False):
    _check_group(group, "broadcast")
    work = _d.broadcast(tensor, src, async_op)
    return _run(work, (lambda r: None) if _d.get_rank() == src else tensor.copy_, async_op)


def _same_shapes(tensors, like, what):
    if len(tensors) != _d.get_world_size():
        raise ValueError(f"torch.distributed.{what}: got {len(tensors)} tensors for a world of "
                         f"{_d.get_world_size()}")
    for t in tensors:
        if tuple(t.shape) != tuple(like.shape):
            raise ValueError(f"torch.distributed.{what}: every tensor must have shape {tuple(like.shape)}, got "
                             f"{tuple(t.shape)}")


def all_gather(tensor_list, tensor, group=None, async_op=False):
    _check_group(group, "all_gather")
    _same_shapes(tensor_list, tensor, "all_gather")

    def finish(result):
        for i, t in enumerate(tensor_list):
            t.copy_(result[i])
    return _run(_d.all_gather(tensor, async_op), finish, async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """output: the ranks' inputs concatenated along dim 0, or stacked."""
    _check_group(group, "all_gather_into_tensor")
    n = _d.get_world_size()
    if output_tensor.numel() != n * input_tensor.numel():
        raise ValueError(f"torch.distributed.all_gather_into_tensor: output of {output_tensor.numel()} elements for "
                         f"{n} inputs of {input_tensor.numel()}")
    return _run(_d.all_gather(input_tensor, async_op), lambda r: output_tensor.copy_(r.reshape(output_tensor.shape)),
                async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    _check_group(group, "reduce_scatter")
    _same_shapes(input_list, output, "reduce_scatter")
    stacked = _loom.stack([t.detach() for t in input_list])
    return _run(_d.reduce_scatter(stacked, op, async_op), lambda r: output.copy_(r.reshape(output.shape)), async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """input: world_size blocks along dim 0 (concatenated or stacked); rank r's output is the reduced block r."""
    _check_group(group, "reduce_scatter_tensor")
    n = _d.get_world_size()
    if input.numel() != n * output.numel():
        raise ValueError(f"torch.distributed.reduce_scatter_tensor: input of {input.numel()} elements for {n} "
                         f"outputs of {output.numel()}")
    blocks = input.detach().reshape((n, output.numel()))
    return _run(_d.reduce_scatter(blocks, op, async_op), lambda r: output.copy_(r.reshape(output.shape)), async_op)


_all_gather_base = all_gather_into_tensor
_reduce_scatter_base = reduce_scatter_tensor


def barrier(group=None, async_op=False, device_ids=None):
    _check_group(group, "barrier")
    _d.barrier()
    return Work(_Finished(), lambda r: None) if async_op else None


__getattr__ = unsupported(__name__)
