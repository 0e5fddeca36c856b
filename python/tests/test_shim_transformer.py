"""The shim's attention layers against real torch's on the same weights: MultiheadAttention
(masks of both kinds, key padding, batch_first, unbatched, separate key and value sizes, the
returned weights), the Transformer encoder and decoder layers and stacks (post- and pre-norm,
relu and gelu), nn.Transformer, and torch 2's scaled_dot_product_attention against its
documented formula computed by torch."""
import math

import numpy as np
import pytest
import torch

import loom.shim.torch as lt
from twins import check, pair, twins


def _x(rng, *shape):
    return pair(rng.standard_normal(shape).astype(np.float32))


def _const(array):
    return torch.from_numpy(array.copy()), lt.from_numpy(array.copy())


@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_with_masks(batch_first, rng):
    torch.manual_seed(0)
    real, ours = twins("MultiheadAttention", 8, 2, batch_first=batch_first)
    q = _x(rng, *((2, 3, 8) if batch_first else (3, 2, 8)))
    kv = _x(rng, *((2, 4, 8) if batch_first else (4, 2, 8)))
    padding = _const(np.array([[False, False, True, False], [False, False, False, True]]))
    float_mask = _const(np.triu(np.full((3, 4), -1.5, np.float32), 1))
    check(real, ours, [q, kv, kv, padding, (True, True), float_mask], rng)
    bool_mask = _const(np.triu(np.ones((2 * 2, 3, 4), bool), 2))
    real, ours = twins("MultiheadAttention", 8, 2, batch_first=batch_first)
    check(real, ours, [q, kv, kv, (None, None), (True, True), bool_mask, (False, False)], rng)


def test_multihead_attention_kdim_vdim_unbatched_and_no_weights(rng):
    torch.manual_seed(1)
    real, ours = twins("MultiheadAttention", 6, 3, kdim=4, vdim=5, bias=False)
    check(real, ours, [_x(rng, 2, 6), _x(rng, 3, 4), _x(rng, 3, 5)], rng)
    real, ours = twins("MultiheadAttention", 6, 3)
    q = _x(rng, 2, 1, 6)
    check(real, ours, [q, q, q, (None, None), (False, False)], rng)


@pytest.mark.parametrize("norm_first,activation", [(False, "relu"), (True, "gelu")])
def test_encoder_and_decoder_layers(norm_first, activation, rng):
    torch.manual_seed(2)
    kw = dict(dim_feedforward=12, dropout=0.0, activation=activation, norm_first=norm_first)
    real, ours = twins("TransformerEncoderLayer", 8, 2, **kw)
    mask = _const(np.triu(np.full((5, 5), -np.inf, np.float32), 1))
    check(real, ours, [_x(rng, 5, 2, 8), mask], rng)
    real, ours = twins("TransformerDecoderLayer", 8, 2, batch_first=True, **kw)
    check(real, ours, [_x(rng, 2, 3, 8), _x(rng, 2, 5, 8)], rng)


def test_transformer(rng):
    torch.manual_seed(3)
    real, ours = twins("Transformer", 8, 2, 2, 1, 16, 0.0)
    tgt_mask = _const(torch.nn.Transformer.generate_square_subsequent_mask(3).numpy())
    np.testing.assert_array_equal(lt.nn.Transformer.generate_square_subsequent_mask(3).numpy(), tgt_mask[0].numpy())
    check(real, ours, [_x(rng, 4, 2, 8), _x(rng, 3, 2, 8), (None, None), tgt_mask], rng)


def test_encoder_stack_in_eval_mode(rng):
    torch.manual_seed(4)
    layer_t = torch.nn.TransformerEncoderLayer(8, 4, 16, 0.1)
    real = torch.nn.TransformerEncoder(layer_t, 2, norm=torch.nn.LayerNorm(8)).eval()
    ours = lt.nn.TransformerEncoder(lt.nn.TransformerEncoderLayer(8, 4, 16, 0.1), 2, norm=lt.nn.LayerNorm(8)).eval()
    ours.load_state_dict({k: lt.from_numpy(v.numpy().copy()) for k, v in real.state_dict().items()})
    x = rng.standard_normal((5, 2, 8)).astype(np.float32)
    with torch.no_grad():
        want = real(torch.from_numpy(x))
    np.testing.assert_allclose(ours(lt.from_numpy(x)).detach().numpy(), want.numpy(), rtol=2e-5, atol=2e-5)


def _sdpa_formula(q, k, v, mask=None, causal=False, scale=None):
    scores = q @ k.transpose(-2, -1) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if causal:
        mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask
    return torch.softmax(scores, -1) @ v


@pytest.mark.parametrize("kind", ["plain", "causal", "bool mask", "float mask", "scale"])
def test_scaled_dot_product_attention_is_its_formula(kind, rng):
    q, k, v = (rng.standard_normal((2, 3, s, 4)).astype(np.float32) for s in (5, 6, 6))
    mask = {"bool mask": rng.random((5, 6)) > 0.3, "float mask": rng.standard_normal((5, 6)).astype(np.float32)}
    mask = mask.get(kind)
    if mask is not None:
        mask[:, 0] = True if mask.dtype == bool else mask[:, 0]  # every row attends somewhere
    args = dict(causal=kind == "causal", scale=0.3 if kind == "scale" else None)
    tq, tk, tv = (torch.from_numpy(a.copy()).requires_grad_() for a in (q, k, v))
    want = _sdpa_formula(tq, tk, tv, None if mask is None else torch.from_numpy(mask.copy()), **args)
    lq, lk, lv = (lt.from_numpy(a.copy()).requires_grad_() for a in (q, k, v))
    got = lt.nn.functional.scaled_dot_product_attention(
        lq, lk, lv, None if mask is None else lt.from_numpy(mask.copy()), is_causal=args["causal"],
        scale=args["scale"])
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    g = rng.standard_normal(want.shape).astype(np.float32)
    (want * torch.from_numpy(g)).sum().backward()
    (got * lt.from_numpy(g.copy())).sum().backward()
    for a, b in ((lq, tq), (lk, tk), (lv, tv)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5)
