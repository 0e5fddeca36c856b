"""The shim's RNN, LSTM and GRU (and their cells) against real torch's: parameter names and
shapes, outputs, final states and every gradient on the same weights and inputs, for stacked,
bidirectional, batch_first and unbatched layers and given initial states."""
import warnings

import numpy as np
import pytest
import torch

import loom.shim.torch as lt
from twins import check, pair, twins


def _state(rng, mode, shape):
    if mode == "LSTM":
        (h_t, h_l), (c_t, c_l) = pair(rng.standard_normal(shape).astype(np.float32)), \
            pair(rng.standard_normal(shape).astype(np.float32))
        return (h_t, c_t), (h_l, c_l)
    return pair(rng.standard_normal(shape).astype(np.float32))


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("layers,bidirectional,batch_first,bias", [(1, False, False, True), (2, True, True, False)])
def test_layer_matches_torch(mode, layers, bidirectional, batch_first, bias, rng):
    torch.manual_seed(1)
    real, ours = twins(mode, 5, 7, layers, bias=bias, batch_first=batch_first, bidirectional=bidirectional)
    seq, batch = 4, 3
    x = pair(rng.standard_normal((batch, seq, 5) if batch_first else (seq, batch, 5)).astype(np.float32))
    check(real, ours, [x], rng)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_given_state_and_unbatched_input(mode, rng):
    torch.manual_seed(2)
    real, ours = twins(mode, 3, 4, 2, bidirectional=True)
    x = pair(rng.standard_normal((5, 2, 3)).astype(np.float32))
    check(real, ours, [x, _state(rng, mode, (4, 2, 4))], rng)
    real, ours = twins(mode, 3, 4, 2)
    x = pair(rng.standard_normal((5, 3)).astype(np.float32))
    check(real, ours, [x, _state(rng, mode, (2, 4))], rng)


def test_rnn_relu(rng):
    # torch 2 also takes nonlinearity as the fourth positional argument (1.13 read it as bias)
    assert lt.nn.RNN(4, 6, 2, "relu").nonlinearity == "relu"
    torch.manual_seed(3)
    real, ours = twins("RNN", 4, 6, 2, nonlinearity="relu")
    assert repr(ours) == repr(real)
    check(real, ours, [pair(rng.standard_normal((3, 2, 4)).astype(np.float32))], rng)


@pytest.mark.parametrize("mode", ["LSTMCell", "GRUCell", "RNNCell"])
def test_cells_match_torch(mode, rng):
    torch.manual_seed(4)
    real, ours = twins(mode, 5, 6)
    x = pair(rng.standard_normal((3, 5)).astype(np.float32))
    check(real, ours, [x], rng)
    real, ours = twins(mode, 5, 6)
    check(real, ours, [x, _state(rng, mode.replace("Cell", ""), (3, 6))], rng)


def test_dropout_between_layers_only_in_training():
    torch.manual_seed(5)
    lt.manual_seed(5)
    ours = lt.nn.LSTM(4, 8, 2, dropout=0.5)
    x = lt.ones(3, 2, 4)
    a, b = ours(x)[0], ours(x)[0]
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())  # a new dropout mask each call
    ours.eval()
    np.testing.assert_array_equal(ours(x)[0].detach().numpy(), ours(x)[0].detach().numpy())


def test_errors_and_warnings_as_torch():
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        lt.nn.GRU(3, 4, 1, dropout=0.2)
    assert any("non-zero dropout expects num_layers greater than 1" in str(w.message) for w in seen)
    lstm = lt.nn.LSTM(3, 4)
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 5"):
        lstm(lt.ones(2, 1, 5))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(1, 1, 4\), got \[1, 2, 4\]"):
        lstm(lt.ones(2, 1, 3), (lt.zeros(1, 2, 4), lt.zeros(1, 2, 4)))
    real = torch.nn.LSTM(3, 4)
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(1, 1, 4\), got \[1, 2, 4\]"):
        real(torch.ones(2, 1, 3), (torch.zeros(1, 2, 4), torch.zeros(1, 2, 4)))
    with pytest.raises(ValueError, match="Expected input to be 2D or 3D, got 4D"):
        lstm(lt.ones(1, 2, 1, 3))
    with pytest.raises(NotImplementedError, match="proj_size"):
        lt.nn.LSTM(3, 4, proj_size=2)
    assert repr(lt.nn.LSTM(3, 4, 2, batch_first=True)) == repr(torch.nn.LSTM(3, 4, 2, batch_first=True))
