"""Attention as torch computes it, from loom ops: scaled_dot_product_attention (torch 2's
functional) and multi-head attention (nn.MultiheadAttention's forward, with torch 1.13's
mask rules: a bool attn_mask or key_padding_mask marks the places NOT attended; a float
one is added to the scores)."""
import math

from loom import ones, bool as bool_
from loom import nn as _f


def _masked(scores, mask, disallowed):
    """scores with mask applied: a bool mask sets -inf where `disallowed` is its value, a float mask adds."""
    if mask is None:
        return scores
    if mask.dtype == bool_:
        return scores.masked_fill(mask if disallowed else mask.logical_not(), float("-inf"))
    return scores + mask


def _attend(q, k, v, mask, dropout_p, training, disallowed):
    """softmax(q k^T + mask) v over the last two dims, with q already scaled; also the weights."""
    weights = _f.softmax(_masked(q.matmul(k.transpose(-2, -1)), mask, disallowed), -1)
    if dropout_p > 0.0 and training:
        weights = _f.dropout(weights, dropout_p, True)
    return weights.matmul(v), weights


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    """torch 2's: softmax(q k^T * scale + mask) v; a bool mask's True places take part; is_causal
    masks the upper triangle (and excludes attn_mask, as torch does)."""
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    if is_causal:
        attn_mask = ones(query.shape[-2], key.shape[-2], dtype=bool_).tril()
    return _attend(query * scale, key, value, attn_mask, dropout_p, True, disallowed=False)[0]


def _split_heads(x, length, batch, heads):
    """(length * batch, heads * d) -> (batch, heads, length, d)."""
    return x.reshape(length, batch, heads, -1).permute(1, 2, 0, 3)


def _check_mask(attn_mask, key_padding_mask, tgt_len, src_len, batch, heads):
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                   f"{(tgt_len, src_len)}.")
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (batch * heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                   f"{(batch * heads, tgt_len, src_len)}.")
            attn_mask = attn_mask.reshape(batch, heads, tgt_len, src_len)
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
        if attn_mask.dtype not in (bool_,) and not attn_mask.is_floating_point():
            raise AssertionError(f"Only float, byte, and bool types are supported for attn_mask, not {attn_mask.dtype}")
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (batch, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(batch, src_len)}, but got "
                                 f"{tuple(key_padding_mask.shape)}")
        key_padding_mask = key_padding_mask.reshape(batch, 1, 1, src_len)
    return attn_mask, key_padding_mask


def multi_head_attention(mha, query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights):
    """nn.MultiheadAttention's forward for (L, N, E) query and (S, N, E) key and value."""
    tgt_len, batch, embed = query.shape
    src_len, heads = key.shape[0], mha.num_heads
    head_dim = embed // heads
    if mha._qkv_same_embed_dim:
        w_q, w_k, w_v = mha.in_proj_weight.chunk(3)
    else:
        w_q, w_k, w_v = mha.q_proj_weight, mha.k_proj_weight, mha.v_proj_weight
    b_q, b_k, b_v = mha.in_proj_bias.chunk(3) if mha.in_proj_bias is not None else (None, None, None)
    q = _split_heads(_f.linear(query.reshape(tgt_len * batch, embed), w_q, b_q), tgt_len, batch, heads)
    k = _split_heads(_f.linear(key.reshape(src_len * batch, key.shape[2]), w_k, b_k), src_len, batch, heads)
    v = _split_heads(_f.linear(value.reshape(src_len * batch, value.shape[2]), w_v, b_v), src_len, batch, heads)
    attn_mask, key_padding_mask = _check_mask(attn_mask, key_padding_mask, tgt_len, src_len, batch, heads)
    scores = _masked(q.div(math.sqrt(head_dim)).matmul(k.transpose(-2, -1)), attn_mask, True)
    weights = _f.softmax(_masked(scores, key_padding_mask, True), -1)
    if mha.dropout > 0.0 and mha.training:
        weights = _f.dropout(weights, mha.dropout, True)
    out = weights.matmul(v).permute(2, 0, 1, 3).reshape(tgt_len * batch, embed)
    out = _f.linear(out, mha.out_proj.weight, mha.out_proj.bias).reshape(tgt_len, batch, embed)
    if not need_weights:
        return out, None
    return out, (weights.sum(1) / heads if average_attn_weights else weights)
