"""loom.schedule: the kernels a realize would run, without running them."""
from . import _C


def schedule(*tensors):
    """The kernels `loom.realize_all(tensors)` would run now, in order: those
    computing `tensors` and every pending in-place update (left pending).
    Nothing is compiled or run. Each KernelInfo has `name`, `ast`, `program`
    (linearized, C target), `c_source`, `cuda_source` with `cuda_blocks` x
    `cuda_threads`, `buffers` (slot 0 is the output), `bound` (runtime scalars
    and pointer shifts the launch binds) and `library` (the extern kernel run in
    its place, such as "openblas sgemm", or "")."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    for i, t in enumerate(tensors):
        if not isinstance(t, _C.Tensor):
            raise TypeError(f"schedule(): argument {i} must be a Tensor, not {type(t).__name__}")
    return _C.kernels_of(list(tensors))
