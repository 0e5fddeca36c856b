"""torch.nn's recurrent layers (RNN, LSTM, GRU and their cells) as loops of loom ops.

Parameters, their names, order and initialization, the gate order (LSTM: i, f, g, o; GRU:
r, z, n), the shapes of inputs, states and outputs, batch_first, unbatched inputs, dropout
between layers and bidirectional layers are torch's. Each layer projects the whole input
sequence with one matmul (as cuDNN does), then steps through time; autograd goes through
the ops. PackedSequence and LSTM projections (proj_size) are not implemented.
"""
import math
import numbers
import warnings

from loom import Tensor, cat, empty, realize_all, stack, zeros
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _rnn_cell(gi, gh, relu):
    pre = gi + gh
    return pre.relu() if relu else pre.tanh()


def _lstm_cell(gi, gh, state):
    h, c = state
    i, f, g, o = (gi + gh).chunk(4, 1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c


def _gru_cell(gi, gh, h):
    i_r, i_z, i_n = gi.chunk(3, 1)
    h_r, h_z, h_n = gh.chunk(3, 1)
    r, z = (i_r + h_r).sigmoid(), (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    return (1 - z) * n + z * h


def _step(mode, gi, gh, state):
    if mode == "LSTM":
        return _lstm_cell(gi, gh, state)
    if mode == "GRU":
        return _gru_cell(gi, gh, state)
    return _rnn_cell(gi, gh, mode == "RNN_RELU")


def _suffix(layer, direction):
    """torch's parameter-name suffix: _l0, _l0_reverse, _l1, ..."""
    return f"_l{layer}" + ("_reverse" if direction else "")


def _check_size(what, got, want):
    if tuple(got) != tuple(want):
        raise RuntimeError(f"Expected {what} size {tuple(want)}, got {list(got)}")


class RNNBase(Module):
    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}")
        if proj_size:
            raise NotImplementedError("torch.nn.LSTM(proj_size=...) is not supported by loom")
        if hidden_size <= 0 or num_layers <= 0:
            raise ValueError("hidden_size must be greater than 0" if hidden_size <= 0
                             else "num_layers must be greater than 0")
        self.mode, self.input_size, self.hidden_size, self.num_layers = mode, input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        factory = {"dtype": dtype} if dtype is not None else {}
        gate_size = _GATES[mode] * hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            for direction in range(2 if bidirectional else 1):
                layer_input = input_size if layer == 0 else hidden_size * (2 if bidirectional else 1)
                suffix = _suffix(layer, direction)
                shapes = [("weight_ih", (gate_size, layer_input)), ("weight_hh", (gate_size, hidden_size))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                for name, shape in shapes:
                    setattr(self, name + suffix, Parameter(empty(*shape, **factory)))
                    self._flat_weights_names.append(name + suffix)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self):
        """Nothing to do: loom keeps no packed copy of the weights."""

    @property
    def _flat_weights(self):
        return [getattr(self, name) for name in self._flat_weights_names]

    def _weights(self, layer, direction):
        suffix = _suffix(layer, direction)
        return tuple(getattr(self, name + suffix, None) for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))

    def _run_direction(self, x, state, layer, direction):
        """One layer in one direction over x (L, N, H_in): the outputs (L, N, H) and the last state."""
        w_ih, w_hh, b_ih, b_hh = self._weights(layer, direction)
        seq_len, batch = x.shape[0], x.shape[1]
        projected = F.linear(x.reshape(seq_len * batch, x.shape[2]), w_ih, b_ih).reshape(seq_len, batch, -1)
        steps = range(seq_len - 1, -1, -1) if direction else range(seq_len)
        outputs = [None] * seq_len
        for t in steps:
            h = state[0] if self.mode == "LSTM" else state
            state = _step(self.mode, projected[t], F.linear(h, w_hh, b_hh), state)
            # each step's state in its own buffer (so are their gradients): step t reads step t-1's
            # values rather than recomputing the whole recurrence inside its kernel
            state = tuple(s.materialize() for s in state) if self.mode == "LSTM" else state.materialize()
            outputs[t] = state[0] if self.mode == "LSTM" else state
        return stack(outputs) if seq_len else x.new_zeros(0, batch, self.hidden_size), state

    def _initial_states(self, x, hx):
        dirs = 2 if self.bidirectional else 1
        want = (self.num_layers * dirs, x.shape[1], self.hidden_size)
        if hx is None:
            h0 = zeros(*want, dtype=x.dtype)
            return (h0, zeros(*want, dtype=x.dtype)) if self.mode == "LSTM" else h0
        parts = hx if self.mode == "LSTM" else (hx,)
        for what, part in zip(("hidden[0]", "hidden[1]") if self.mode == "LSTM" else ("hidden",), parts):
            _check_size(what, part.shape, want)
        return hx

    def forward(self, input, hx=None):
        if not isinstance(input, Tensor):
            raise NotImplementedError("torch.nn.utils.rnn.PackedSequence is not supported by loom")
        if input.dim() not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.dim()}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.shape[-1]}")
        unbatched = input.dim() == 2
        x = input.unsqueeze(1) if unbatched else (input.transpose(0, 1) if self.batch_first else input)
        if unbatched and hx is not None:
            hx = tuple(h.unsqueeze(1) for h in hx) if self.mode == "LSTM" else hx.unsqueeze(1)
        states = self._initial_states(x, hx)
        dirs = 2 if self.bidirectional else 1
        finals = []
        for layer in range(self.num_layers):
            outs = []
            for direction in range(dirs):
                k = layer * dirs + direction
                state = (states[0][k], states[1][k]) if self.mode == "LSTM" else states[k]
                out, state = self._run_direction(x, state, layer, direction)
                outs.append(out)
                finals.append(state)
            x = outs[0] if dirs == 1 else cat(outs, 2)
            if self.dropout and self.training and layer + 1 < self.num_layers:
                x = F.dropout(x, self.dropout, True)
        if self.mode == "LSTM":
            hidden = (stack([s[0] for s in finals]), stack([s[1] for s in finals]))
        else:
            hidden = stack(finals)
        # The final state is realized now, as torch's would be: a script that feeds it to the next call
        # (truncated backpropagation through time, after detach()) then starts from a buffer. Left lazy,
        # every later graph would reach back through all earlier steps' graphs.
        realize_all(list(hidden) if self.mode == "LSTM" else [hidden])
        output = x.squeeze(1) if unbatched else (x.transpose(0, 1) if self.batch_first else x)
        if unbatched:
            hidden = tuple(h.squeeze(1) for h in hidden) if self.mode == "LSTM" else hidden.squeeze(1)
        return output, hidden

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    def __init__(self, *args, **kwargs):
        nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if len(args) > 3:  # torch's positional order: input_size, hidden_size, num_layers, nonlinearity, ...
            nonlinearity, args = args[3], args[:3] + args[4:]
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", *args, **kwargs)


class LSTM(RNNBase):
    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    def __init__(self, *args, **kwargs):
        super().__init__("GRU", *args, **kwargs)


class RNNCellBase(Module):
    """One time step: input (N, H_in) or (H_in,), state (N, H) or (H,) (LSTM: a pair)."""

    def __init__(self, mode, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__()
        self.mode, self.input_size, self.hidden_size, self.bias = mode, input_size, hidden_size, bias
        factory = {"dtype": dtype} if dtype is not None else {}
        gate_size = _GATES[mode] * hidden_size
        self.weight_ih = Parameter(empty(gate_size, input_size, **factory))
        self.weight_hh = Parameter(empty(gate_size, hidden_size, **factory))
        if bias:
            self.bias_ih = Parameter(empty(gate_size, **factory))
            self.bias_hh = Parameter(empty(gate_size, **factory))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    reset_parameters = RNNBase.reset_parameters

    def forward(self, input, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        unbatched = input.dim() == 1
        x = input.unsqueeze(0) if unbatched else input
        if hx is None:
            h0 = zeros(x.shape[0], self.hidden_size, dtype=x.dtype)
            hx = (h0, zeros(x.shape[0], self.hidden_size, dtype=x.dtype)) if self.mode == "LSTM" else h0
        elif unbatched:
            hx = tuple(h.unsqueeze(0) for h in hx) if self.mode == "LSTM" else hx.unsqueeze(0)
        h = hx[0] if self.mode == "LSTM" else hx
        out = _step(self.mode, F.linear(x, self.weight_ih, self.bias_ih), F.linear(h, self.weight_hh, self.bias_hh), hx)
        if unbatched:
            out = tuple(o.squeeze(0) for o in out) if self.mode == "LSTM" else out.squeeze(0)
        return out

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, bias,
                         device, dtype)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, bias, device, dtype)


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, bias, device, dtype)
