"""torch.cuda for loom: available when the process computes on CUDA
(LOOM_DEVICE=CUDA, one GPU); otherwise nothing is, and the calls scripts make
around timing and seeding work on the CPU clock."""
import time

from loom import _C
from loom.shim import unsupported


def is_available():
    return _C.device() == "cuda"


def device_count():
    return 1 if is_available() else 0


def current_device():
    return 0


def synchronize(device=None):
    """Waits for the kernels queued on the GPU (on the CPU each realize runs to completion)."""
    _C.synchronize()


def manual_seed(seed):
    pass


def manual_seed_all(seed):
    pass


def empty_cache():
    pass


def memory_allocated(device=None):
    return 0


def max_memory_allocated(device=None):
    return 0


def reset_peak_memory_stats(device=None):
    pass


class Event:
    """A timestamp taken by record() on the CPU clock; elapsed_time() is in milliseconds, as torch's."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self.enable_timing = enable_timing
        self._time = None

    def record(self, stream=None):
        _C.synchronize()  # the time when the work queued so far is done
        self._time = time.perf_counter()

    def query(self):
        return True

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass

    def elapsed_time(self, end_event):
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._time is None or end_event._time is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._time - self._time) * 1000.0


__getattr__ = unsupported(__name__)
