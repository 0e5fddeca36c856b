"""Shared helpers: every check compares loom with real torch on the same inputs."""
import numpy as np
import pytest
import torch

import loom

torch.set_num_threads(2)

DTYPES = {
    "bool": (loom.bool, torch.bool), "uint8": (loom.uint8, torch.uint8), "int8": (loom.int8, torch.int8),
    "int16": (loom.int16, torch.int16), "int32": (loom.int32, torch.int32), "int64": (loom.int64, torch.int64),
    "float16": (loom.float16, torch.float16), "float32": (loom.float32, torch.float32),
    "float64": (loom.float64, torch.float64),
}


def both(array):
    """The same values as a loom tensor and a torch tensor."""
    array = np.ascontiguousarray(array)
    return loom.from_numpy(array), torch.from_numpy(array.copy())


def assert_same(got, want, rtol=1e-6, atol=1e-6):
    """loom result vs torch result: dtype name, shape and values."""
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w, rtol, atol)
        return
    assert isinstance(got, loom.Tensor), type(got)
    # once the shim is imported, the dtypes loom returns are torch's ("torch.float32")
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], (got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.numpy().astype(np.float64), want.numpy().astype(np.float64), rtol=rtol, atol=atol)


@pytest.fixture
def rng():
    return np.random.default_rng(20261123)
