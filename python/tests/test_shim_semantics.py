"""torch semantics under the shim, each against real torch on the same
values: reads and writes through tensor indices, torch.where with numbers,
fmod, view's stride rule, backward's freed graph and retain_graph,
nn.Embedding, multinomial, save/load of views, Normalize on batches."""
import numpy as np
import pytest
import torch

import loom.shim.torch as lt


def _both(array):
    return torch.from_numpy(array.copy()), lt.from_numpy(array.copy())


def _same(got, want):
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def _raises_like(f_torch, f_loom):
    with pytest.raises(Exception) as want:
        f_torch()
    with pytest.raises(type(want.value)) as got:
        f_loom()
    assert str(got.value).split("\n")[0] == str(want.value).split("\n")[0]


def _index(m, spec):
    """An index tuple for module m (torch or the shim) from a picklable spec."""
    out = []
    for k in spec:
        if isinstance(k, np.ndarray):
            out.append(m.from_numpy(k.copy()))
        else:
            out.append(k)
    return tuple(out)


SPECS = [
    (np.array([0, 2]),),
    (np.array([0, 2]), slice(1, None)),
    (slice(None), np.array([[1], [0]]), np.array([2, 3])),           # adjacent, broadcast
    (np.array([1, 0]), slice(None), np.array([3, -1])),              # not adjacent: result dims first
    (0, slice(None), np.array([1, 2, 3, 0, 1])),                     # an int is a select first
    (np.array([True, False, True]),),
    (np.array([[True, False, True, False]] * 3),),
    (Ellipsis, np.array([-1, 0])),
    (None, np.array([1, 1, 2])),
]


@pytest.mark.parametrize("spec", range(len(SPECS)))
def test_tensor_indices_read_and_write_like_torch(spec, rng):
    key = SPECS[spec]
    base = rng.standard_normal((3, 4, 5) if len(key) == 3 else (3, 4)).astype(np.float32)
    t, l = _both(base)
    want = t[_index(torch, key)]
    _same(l[_index(lt, key)], want)
    values = rng.standard_normal(tuple(want.shape)).astype(np.float32)
    vt, vl = _both(values)
    t[_index(torch, key)] = vt
    l[_index(lt, key)] = vl
    _same(l, t)
    # a broadcast row of values, and a number
    row = rng.standard_normal(tuple(want.shape)[-1:]).astype(np.float32)
    rt, rl = _both(row)
    t[_index(torch, key)] = rt
    l[_index(lt, key)] = rl
    _same(l, t)
    t[_index(torch, key)] = 7.5
    l[_index(lt, key)] = 7.5
    _same(l, t)


def test_index_put_accumulates_duplicates_like_torch(rng):
    base = rng.standard_normal((5, 3)).astype(np.float32)
    vals = rng.standard_normal((4, 3)).astype(np.float32)
    idx = np.array([1, 3, 1, -1])
    for accumulate in (True, False):
        t, l = _both(base)
        vt, vl = _both(vals if accumulate else vals[:1].repeat(4, 0))
        it, il = _both(idx)
        t.index_put_((it,), vt, accumulate=accumulate)
        l.index_put_((il,), vl, accumulate=accumulate)
        np.testing.assert_allclose(l.numpy(), t.numpy(), rtol=1e-6)
    t, l = _both(np.zeros((2, 3), np.int64))
    ia, ib = np.array([0, 1, 0]), np.array([2, 2, 2])
    _same(l.index_put((lt.from_numpy(ia), lt.from_numpy(ib)), lt.tensor([1, 2, 3]), accumulate=True),
          t.index_put((torch.from_numpy(ia), torch.from_numpy(ib)), torch.tensor([1, 2, 3]), accumulate=True))


def test_index_put_gradients_match_torch(rng):
    base = rng.standard_normal((4, 3)).astype(np.float32)
    vals = rng.standard_normal((2, 3)).astype(np.float32)
    weight = rng.standard_normal((4, 3)).astype(np.float32)
    grads = []
    for m in (torch, lt):
        a = m.from_numpy(base.copy()).requires_grad_()
        v = m.from_numpy(vals.copy()).requires_grad_()
        b = a * 2
        b[m.tensor([0, 2])] = v * 3
        (b * m.from_numpy(weight.copy())).sum().backward()
        grads.append((a.grad.numpy(), v.grad.numpy()))
    for got, want in zip(grads[1], grads[0]):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_indexing_errors_are_torchs():
    def pair(f):
        _raises_like(lambda: f(torch), lambda: f(lt))
    pair(lambda m: m.zeros(2, 3, 4)[m.tensor([1, 0]), m.tensor([1, 2, 0])])      # indices do not broadcast
    pair(lambda m: m.zeros(2, 3, 4)[:, m.tensor([5])])                           # out of bounds
    pair(lambda m: m.zeros(2, 3, 4)[m.tensor([True, False, True])])              # mask shape
    pair(lambda m: m.zeros(2, 3)[m.tensor([1.0])])                               # float index

    def bad_value(m):
        a = m.zeros(3, 4)
        a[m.tensor([0, 2])] = m.tensor([1.0, 2.0])
    pair(bad_value)

    def bad_dtype(m):
        a = m.zeros(3, 4)
        a[m.tensor([0, 2])] = m.tensor([1, 2, 3, 4])
    pair(bad_dtype)
    pair(lambda m: m.zeros(5).index_put_((m.tensor([1]), m.tensor([1])), m.tensor(1.0)))


def test_where_takes_numbers_as_torch_does():
    c = np.array([True, False, True])
    ct, cl = _both(c)
    for a, b in [(1.0, 0.0), (1, 0), (1, 0.5), (True, False)]:
        _same(lt.where(cl, a, b), torch.where(ct, a, b))
    xt, xl = _both(np.array([1, 2, 3]))
    _same(lt.where(cl, xl, 0.5), torch.where(ct, xt, 0.5))
    _same(lt.where(cl, 2, xl), torch.where(ct, 2, xt))


def test_fmod_takes_the_dividends_sign_like_torch(rng):
    a = np.array([-7.5, -3.0, 3.0, 5.25, -0.0, 7.0], np.float32)
    b = np.array([2.0, -2.0, 2.0, -1.5, 3.0, 0.5], np.float32)
    (at, al), (bt, bl) = _both(a), _both(b)
    _same(lt.fmod(al, bl), torch.fmod(at, bt))
    _same(al.fmod(2), at.fmod(2))
    ai, bi = np.array([-7, 7, -3, 3, 0], np.int64), np.array([2, -2, 2, 5, 3], np.int64)
    (ait, ail), (bit, bil) = _both(ai), _both(bi)
    _same(lt.fmod(ail, bil), torch.fmod(ait, bit))
    _same(ail.fmod(-3), ait.fmod(-3))
    x = al.clone()
    x.fmod_(2.5)
    y = at.clone()
    y.fmod_(2.5)
    _same(x, y)
    g = []
    for m, u, v in ((torch, at, bt), (lt, al, bl)):
        u, v = u.clone().requires_grad_(), v.clone().requires_grad_()
        m.fmod(u, v).sum().backward()
        g.append((u.grad.numpy(), v.grad.numpy()))
    for got, want in zip(g[1], g[0]):
        np.testing.assert_array_equal(got, want)


def test_view_raises_where_torch_does():
    for shape, make, new in [((3, 4), lambda t: t.t(), (12,)), ((2, 3, 4), lambda t: t.permute(0, 2, 1), (2, 12)),
                             ((4, 6), lambda t: t[:, :3], (12,))]:
        arr = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
        t, l = _both(arr)
        _raises_like(lambda: make(t).view(*new), lambda: make(l).view(*new))
    for shape, make, new in [((3, 4), lambda t: t.t(), (4, 3)), ((2, 3, 4), lambda t: t.permute(1, 0, 2), (3, 2, 2, 2)),
                             ((4, 6), lambda t: t[1:3], (12,)), ((3, 4), lambda t: t.t(), (2, 2, 3)),
                             ((2, 3, 4), lambda t: t.permute(2, 0, 1), (4, 6)), ((4, 6), lambda t: t[:, ::2], (12,))]:
        arr = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
        t, l = _both(arr)
        try:
            want = make(t).view(*new)
        except RuntimeError:
            with pytest.raises(RuntimeError):
                make(l).view(*new)
            continue
        got = make(l).view(*new)
        _same(got, want)
        got.fill_(-1)  # a view: the write reaches the base
        want.fill_(-1)
        _same(l, t)


def test_a_second_backward_raises_unless_the_graph_is_retained():
    for m in (torch, lt):
        w = m.ones(3, requires_grad=True)
        loss = (w * w).sum()
        loss.backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            loss.backward()
        w.grad = None
        loss = (w * w).sum()
        loss.backward(retain_graph=True)
        loss.backward()
        np.testing.assert_array_equal(w.grad.numpy(), np.full(3, 4, np.float32))
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            m.autograd.grad(loss, w)
        # nodes that saved nothing can run again, in torch as here
        w.grad = None
        loss = (w + 1).mean()
        loss.backward()
        loss.backward()
        np.testing.assert_allclose(w.grad.numpy(), np.full(3, 2 / 3, np.float32), rtol=1e-6)


@pytest.mark.parametrize("padding_idx", [None, 1, -1])
def test_embedding_matches_torch_forward_and_backward(padding_idx, rng):
    weight = rng.standard_normal((6, 4)).astype(np.float32)
    idx = np.array([[1, 5, 1], [0, 2, 5]])
    upstream = rng.standard_normal((2, 3, 4)).astype(np.float32)
    got = []
    for m in (torch, lt):
        emb = m.nn.Embedding(6, 4, padding_idx=padding_idx)
        with m.no_grad():
            emb.weight.copy_(m.from_numpy(weight.copy()))
        out = emb(m.from_numpy(idx.copy()))
        (out * m.from_numpy(upstream.copy())).sum().backward()
        got.append((out.detach().numpy(), emb.weight.grad.numpy()))
    np.testing.assert_array_equal(got[1][0], got[0][0])
    np.testing.assert_allclose(got[1][1], got[0][1], rtol=1e-6)
    fresh = lt.nn.Embedding(5, 3, padding_idx=padding_idx)
    if padding_idx is not None:
        np.testing.assert_array_equal(fresh.weight.detach().numpy()[padding_idx], np.zeros(3, np.float32))
    assert repr(fresh) == repr(torch.nn.Embedding(5, 3, padding_idx=padding_idx))


def test_multinomial_draws_by_weight_and_raises_as_torch_does():
    lt.manual_seed(3)
    weights = np.array([[0.1, 0.0, 0.6, 0.3], [1.0, 1.0, 0.0, 2.0]], np.float32)
    draws = lt.multinomial(lt.from_numpy(weights.copy()), 4000, replacement=True).numpy()
    assert draws.shape == (2, 4000) and draws.dtype == np.int64
    for row, w in zip(draws, weights):
        freq = np.bincount(row, minlength=4) / len(row)
        np.testing.assert_allclose(freq, w / w.sum(), atol=0.03)
        assert freq[w == 0].sum() == 0
    picked = lt.from_numpy(weights.copy()).multinomial(3).numpy()
    for row, w in zip(picked, weights):
        assert sorted(row.tolist()) == sorted(np.flatnonzero(w).tolist())  # every nonzero weight, each once
    t, l = _both(weights)
    _raises_like(lambda: torch.multinomial(t, 5), lambda: lt.multinomial(l, 5))
    _raises_like(lambda: torch.multinomial(torch.tensor([-1.0, 2.0]), 1),
                 lambda: lt.multinomial(lt.tensor([-1.0, 2.0]), 1))
    _raises_like(lambda: torch.multinomial(torch.tensor([0.0, 0.0]), 1),
                 lambda: lt.multinomial(lt.tensor([0.0, 0.0]), 1))


def test_save_keeps_views_sharing_their_storage_as_torch_does():
    import io
    got = []
    for m in (torch, lt):
        a = m.arange(12.0).reshape(3, 4)
        row, col, alone = a[1], a[:, 2], m.arange(3.0)
        buf = io.BytesIO()
        m.save({"a": a, "row": row, "col": col, "alone": alone, "again": a}, buf)
        buf.seek(0)
        d = m.load(buf)
        d["a"][1, 2] = 100.0      # reaches row and col, which view it
        d["row"][0] = -1.0        # reaches a
        d["alone"][0] = 7.0
        got.append({k: v.numpy().copy() for k, v in d.items()})
        assert d["again"] is d["a"]
    for k in got[0]:
        np.testing.assert_array_equal(got[1][k], got[0][k], err_msg=k)


@pytest.mark.parametrize("shape,dtype", [((2, 3, 4, 5), np.float32), ((3, 4, 5), np.float32),
                                         ((2, 3, 4, 5), np.float16), ((2, 2, 3, 4, 5), np.float32)])
def test_normalize_takes_batches_as_torchvision_does(shape, dtype, rng):
    from loom.shim.torchvision import transforms
    x = rng.standard_normal(shape).astype(dtype)
    mean, std = [0.4914, 0.4822, 0.4465], [0.2470, 0.2435, 0.2616]
    t = torch.from_numpy(x.copy())
    # torchvision's documented rule: output[channel] = (input[channel] - mean[channel]) / std[channel]
    want = (t - torch.tensor(mean, dtype=t.dtype).view(-1, 1, 1)) / torch.tensor(std, dtype=t.dtype).view(-1, 1, 1)
    got = transforms.Normalize(mean, std)(lt.from_numpy(x.copy()))
    _same(got, want)
    inplace = lt.from_numpy(x.copy())
    transforms.Normalize(mean, std, inplace=True)(inplace)
    _same(inplace, want)
    with pytest.raises(TypeError, match="Input tensor should be a float tensor"):
        transforms.Normalize(mean, std)(lt.zeros(3, 2, 2, dtype=lt.int64))
    with pytest.raises(ValueError, match="tensor image of size"):
        transforms.Normalize(mean, std)(lt.zeros(3, 2))
    with pytest.raises(ValueError, match="std evaluated to zero"):
        transforms.Normalize(mean, [1.0, 0.0, 1.0])(lt.zeros(3, 2, 2))


EINSUMS = [("ij,jk->ik", [(2, 3), (3, 4)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]), ("i,i->", [(5,), (5,)]),
           ("ij->ji", [(2, 3)]), ("ij", [(2, 3)]), ("ij,kj", [(2, 3), (4, 3)]),
           ("...ij,...jk->...ik", [(2, 1, 2, 3), (3, 3, 4)]), ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
           ("i,j->ij", [(3,), (4,)]), ("ij->", [(2, 3)]), ("ij,ij->ij", [(2, 3), (1, 3)]), ("b i d, b j d -> b i j",
                                                                                          [(2, 3, 4), (2, 5, 4)])]


@pytest.mark.parametrize("case", range(len(EINSUMS)))
def test_einsum_matches_torch_with_gradients(case, rng):
    eq, shapes = EINSUMS[case]
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    results = []
    for m in (torch, lt):
        ops = [m.from_numpy(a.copy()).requires_grad_() for a in arrays]
        out = m.einsum(eq, *ops)
        (out * m.ones(tuple(out.shape)) * 1.5).sum().backward()
        results.append([out.detach().numpy()] + [o.grad.numpy() for o in ops])
    for got, want in zip(results[1], results[0]):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    _raises_like(lambda: torch.einsum("ij,jk->ik", torch.ones(2, 3), torch.ones(2, 3)),
                 lambda: lt.einsum("ij,jk->ik", lt.ones(2, 3), lt.ones(2, 3)))
    _raises_like(lambda: torch.einsum("ij->ik", torch.ones(2, 3)), lambda: lt.einsum("ij->ik", lt.ones(2, 3)))


def test_logsumexp_matches_torch(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    x[1] = -np.inf
    x[2, 1] = np.inf
    t, l = _both(x)
    for dim, keepdim in [(1, False), (0, True), (-1, True)]:
        np.testing.assert_allclose(lt.logsumexp(l, dim, keepdim=keepdim).numpy(),
                                   torch.logsumexp(t, dim, keepdim=keepdim).numpy(), rtol=1e-6)
    y = rng.standard_normal((3, 4)).astype(np.float32)
    grads = []
    for m in (torch, lt):
        v = m.from_numpy(y.copy()).requires_grad_()
        v.logsumexp(1).sum().backward()
        grads.append(v.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)


_SPECIAL = np.array([[-2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5], [0.49999997, -0.49999997, 1e9 + 0.5, -3.7,
                     np.inf, -np.inf, np.nan, 16777217.0]], np.float32)
_INTS = np.array([[-7, -6, -5, -1, 0, 1, 5, 7]], np.int64)

COMPOSED = [
    ("trunc", lambda m, x: x.trunc()), ("fix", lambda m, x: m.fix(x)), ("floor", lambda m, x: m.floor(x)), ("ceil", lambda m, x: x.ceil()),
    ("round", lambda m, x: m.round(x)), ("sign", lambda m, x: x.sign()), ("isnan", lambda m, x: m.isnan(x)),
    ("isinf", lambda m, x: x.isinf()), ("isfinite", lambda m, x: m.isfinite(x)),
    ("any", lambda m, x: (x > 2).any()), ("any dim", lambda m, x: (x > 2).any(1)),
    ("all dim keepdim", lambda m, x: (x > -3).all(0, keepdim=True)),
    ("softmax", lambda m, x: x[:1].softmax(-1)), ("log_softmax", lambda m, x: m.log_softmax(x[:1], 0)),
    ("div trunc", lambda m, x: m.div(x, -0.75, rounding_mode="trunc")),
    ("div floor", lambda m, x: x.div(0.75, rounding_mode="floor")),
    ("clamp tensors", lambda m, x: x.clamp(min=m.zeros(8) - 1, max=m.ones(2, 1))),
    ("masked_fill tensor", lambda m, x: x.masked_fill(x > 0, m.tensor(9.0))),
    ("sum dtype", lambda m, x: (x > 0).sum(dtype=m.float32)), ("mean dtype", lambda m, x: x.mean(1, dtype=m.float64)),
    ("movedim", lambda m, x: x.reshape(2, 2, 4).movedim(0, -1)), ("moveaxis", lambda m, x: m.moveaxis(x, 1, 0)),
    ("repeat_interleave", lambda m, x: x.repeat_interleave(2, dim=0)),
    ("repeat_interleave flat", lambda m, x: m.repeat_interleave(x, 3)),
    ("repeat_interleave tensor", lambda m, x: x.repeat_interleave(m.tensor([1, 3]), dim=0)),
    ("rot90", lambda m, x: x.rot90()), ("rot90 k=3", lambda m, x: m.rot90(x, 3, [1, 0])),
    ("median", lambda m, x: x[:, :4].median()), ("median dim", lambda m, x: x[:, :4].median(1).values),
    ("nonzero", lambda m, x: m.nonzero(x > 0)), ("var_mean", lambda m, x: m.var_mean(x[:, :4], 1, unbiased=False)[0]),
    ("var unbiased", lambda m, x: x[:, :4].var(1, unbiased=False)), ("topk names", lambda m, x: x.topk(2).indices),
    ("sort names", lambda m, x: x[:, :4].sort(descending=True).values),
    ("narrow", lambda m, x: x.narrow(1, -3, 2)), ("narrow fn", lambda m, x: m.narrow(x, 0, 1, 1)),
    ("narrow at the end", lambda m, x: x.narrow(1, 8, 0)), ("select", lambda m, x: x.select(1, -2)),
    ("swapaxes", lambda m, x: m.swapaxes(x, 0, 1)), ("swapdims", lambda m, x: x.swapdims(1, 0)),
    ("mm", lambda m, x: m.mm(x[:, :3], x[:, :3].t())),
    ("bmm", lambda m, x: x[:, :4].reshape(2, 2, 2).bmm(x[:, 4:6].reshape(2, 2, 1))),
]


SHAPE_ERRORS = [
    lambda m: m.ones(5).narrow(0, 7, 1), lambda m: m.ones(5).narrow(0, 3, 4), lambda m: m.ones(5).narrow(0, 1, -1),
    lambda m: m.tensor(1.0).narrow(0, 0, 1), lambda m: m.ones(2, 3).select(0, 5), lambda m: m.ones(2, 3).select(2, 0),
    lambda m: m.mm(m.ones(2, 3), m.ones(4, 5)), lambda m: m.bmm(m.ones(2, 2, 3), m.ones(2, 4, 1)),
    lambda m: m.mm(m.ones(3), m.ones(3, 1)), lambda m: m.bmm(m.ones(2, 3), m.ones(2, 3, 1)),
]


@pytest.mark.parametrize("case", range(len(SHAPE_ERRORS)))
def test_shape_errors_match_torch(case):
    errors = []
    for m in (torch, lt):
        with pytest.raises(Exception) as e:
            SHAPE_ERRORS[case](m)
        errors.append((type(e.value).__name__, str(e.value)))
    assert errors[1] == errors[0]


@pytest.mark.parametrize("case", range(len(COMPOSED)), ids=[c[0] for c in COMPOSED])
def test_composed_methods_match_torch(case):
    name, f = COMPOSED[case]
    with np.errstate(over="ignore"):  # 1e9 is inf in float16
        halves = _SPECIAL.astype(np.float16)
    for arr in (_SPECIAL, halves, _INTS):
        t, l = _both(arr)
        try:
            want = f(torch, t)
        except RuntimeError:  # torch 1.13's CPU kernels lack this dtype (float16): nothing to compare
            continue
        got = f(lt, l)
        assert tuple(got.shape) == tuple(want.shape), name
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], name
        g, w = got.numpy(), want.numpy()
        if g.dtype.kind == "f":  # signed zeros too (a nan's sign is not specified)
            np.testing.assert_array_equal(np.signbit(g) & ~np.isnan(g), np.signbit(w) & ~np.isnan(w), err_msg=name)
            np.testing.assert_allclose(g, w, rtol=1e-6, equal_nan=True, err_msg=name)
        else:
            np.testing.assert_array_equal(g, w, err_msg=name)


def test_tensor_split_and_detach_like_torch():
    for arg in (3, [1, 4], [2, 2, 9]):
        want = [t.numpy() for t in torch.arange(7).tensor_split(arg)]
        got = [t.numpy() for t in lt.arange(7).tensor_split(arg)]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    for m in (torch, lt):
        y = m.ones(2, requires_grad=True) * 2
        y.detach_()
        assert not y.requires_grad and y.grad_fn is None


def test_zero_grad_defaults_follow_the_torch_the_shim_presents():
    assert lt.__version__.startswith(torch.__version__[:4])  # both 1.13
    got = []
    for m in (torch, lt):
        net = m.nn.Linear(3, 2)
        opt = m.optim.SGD(net.parameters(), lr=0.1, weight_decay=0.1)
        net(m.ones(4, 3)).sum().backward()
        opt.zero_grad()
        after_opt = net.weight.grad
        net(m.ones(4, 3)).sum().backward()
        net.zero_grad()
        got.append((after_opt is None, None if after_opt is None else after_opt.numpy().copy(),
                    net.bias.grad is None))
    assert got[1][0] == got[0][0] and got[1][2] == got[0][2]
    if got[0][1] is not None:
        np.testing.assert_array_equal(got[1][1], got[0][1])


INTERPOLATIONS = [dict(scale_factor=2, mode="nearest"), dict(size=(3, 4), mode="nearest"),
                  dict(size=(8, 11), mode="nearest"), dict(scale_factor=(0.5, 2.5), mode="nearest"),
                  dict(scale_factor=2, mode="bilinear", align_corners=False),
                  dict(size=(8, 11), mode="bilinear", align_corners=True),
                  dict(size=(3, 4), mode="bilinear"), dict(scale_factor=1.5, mode="bilinear")]


@pytest.mark.parametrize("case", range(len(INTERPOLATIONS)))
def test_interpolate_matches_torch_with_gradients(case, rng):
    kw = INTERPOLATIONS[case]
    x = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
    results = []
    for m in (torch, lt):
        xi = m.from_numpy(x.copy()).requires_grad_()
        out = m.nn.functional.interpolate(xi, **kw)
        w = m.from_numpy(np.linspace(-1, 1, out.numel(), dtype=np.float32).reshape(tuple(out.shape)))
        (out * w).sum().backward()
        results.append((out.detach().numpy(), xi.grad.numpy()))
    for got, want in zip(results[1], results[0]):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    y = rng.standard_normal((2, 3, 6)).astype(np.float32)
    _same(lt.nn.functional.interpolate(lt.from_numpy(y), scale_factor=3),
          torch.nn.functional.interpolate(torch.from_numpy(y), scale_factor=3))
    np.testing.assert_allclose(
        lt.nn.functional.interpolate(lt.from_numpy(y), size=4, mode="linear", align_corners=True).numpy(),
        torch.nn.functional.interpolate(torch.from_numpy(y), size=4, mode="linear", align_corners=True).numpy(),
        rtol=1e-5, atol=1e-6)


def test_cat_of_many_pieces_matches_torch_in_groups(rng):
    import loom
    arrays = [rng.standard_normal((1, 3, 4)).astype(np.float32) for _ in range(300)]
    ours = [lt.from_numpy(a.copy()).requires_grad_() for a in arrays]
    theirs = [torch.from_numpy(a.copy()).requires_grad_() for a in arrays]
    weight = rng.standard_normal((300, 3, 4)).astype(np.float32)
    loom.realize_all(ours)
    loom.reset_run_stats()
    out = lt.cat(ours, 0)
    got = out.detach().numpy()
    stats = loom.run_stats()
    np.testing.assert_array_equal(got, torch.cat(theirs, 0).detach().numpy())
    # groups of 8 materialized level by level (300 -> 38 -> 5 -> 1): about 18 operations an element, where
    # one kernel summing 300 padded pieces did 299
    assert stats["work"] <= 30 * out.numel(), stats
    (out * lt.from_numpy(weight.copy())).sum().backward()
    (torch.cat(theirs, 0) * torch.from_numpy(weight.copy())).sum().backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())
    _same(lt.stack([lt.from_numpy(a[0]) for a in arrays[:20]], 1),
          torch.stack([torch.from_numpy(a[0]) for a in arrays[:20]], 1))


def _write_idx(path, array):
    import gzip
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


@pytest.mark.parametrize("name", ["MNIST", "FashionMNIST"])
def test_mnist_datasets_read_local_idx_files(name, tmp_path, rng):
    from loom.shim.torchvision import datasets, transforms
    raw = tmp_path / name / "raw"
    raw.mkdir(parents=True)
    images = rng.integers(0, 256, (7, 28, 28)).astype(np.uint8)
    labels = rng.integers(0, 10, (7,)).astype(np.uint8)
    _write_idx(raw / "t10k-images-idx3-ubyte.gz", images)
    _write_idx(raw / "t10k-labels-idx1-ubyte.gz", labels)
    ds = getattr(datasets, name)(str(tmp_path), train=False, download=True,
                                 transform=transforms.Compose([transforms.ToTensor(),
                                                               transforms.Normalize((0.1307,), (0.3081,))]))
    assert len(ds) == 7 and len(ds.classes) == 10
    assert tuple(ds.data.shape) == (7, 28, 28) and str(ds.data.dtype).endswith("uint8")
    np.testing.assert_array_equal(ds.targets.numpy(), labels.astype(np.int64))
    x, y = ds[3]
    assert y == int(labels[3]) and isinstance(y, int)
    want = (torch.from_numpy(images[3].astype(np.float32) / 255).unsqueeze(0) - 0.1307) / 0.3081
    np.testing.assert_allclose(x.numpy(), want.numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="does not download"):
        getattr(datasets, name)(str(tmp_path), train=True, download=True)


def test_retain_grad_keeps_a_non_leafs_gradient_as_torch_does(rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    seen = []
    for m in (torch, lt):
        w = m.from_numpy(x.copy()).requires_grad_()
        h = (w * w).tanh()
        h.retain_grad()
        other = w.exp()
        (h * 3).sum().backward(retain_graph=True)
        (h * other).sum().backward()
        seen.append((h.retains_grad, other.retains_grad, w.retains_grad, h.grad.numpy(), w.grad.numpy()))
        with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
            m.ones(2).retain_grad()
    for got, want in zip(seen[1], seen[0]):
        np.testing.assert_allclose(got, want, rtol=1e-6)


_MODE_INPUT = np.array([[1, 3, 3, 1, 2], [5, 5, 4, 4, 0], [7, 7, 7, 2, 2]], np.float32)
_Q_INPUT = np.array([[1.0, 2.5, -3.0, 4.0, 0.5], [4.0, np.nan, 1.0, 0.0, 2.0], [9.0, 8.0, 7.0, 6.0, 5.0]], np.float32)
REDUCTIONS = [
    ("mode", lambda m, x: m.mode(m.from_numpy(_MODE_INPUT.copy()), 1)),
    ("mode dim 0 keepdim", lambda m, x: m.from_numpy(_MODE_INPUT.copy()).mode(0, keepdim=True)),
    ("mode 0-d", lambda m, x: m.tensor(3.0).mode()),
    ("quantile", lambda m, x: m.from_numpy(_Q_INPUT.copy()).quantile(0.3, dim=1)),
    ("quantile all", lambda m, x: m.quantile(m.from_numpy(_Q_INPUT[::2].copy()), 0.65)),
    ("quantile q tensor keepdim", lambda m, x: m.from_numpy(_Q_INPUT.copy()).quantile(
        m.tensor([0.0, 0.25, 0.9, 1.0]), dim=0, keepdim=True)),
    ("quantile lower", lambda m, x: m.from_numpy(_Q_INPUT.copy()).quantile(0.4, 1, interpolation="lower")),
    ("quantile higher", lambda m, x: m.from_numpy(_Q_INPUT.copy()).quantile(0.4, 1, interpolation="higher")),
    ("quantile midpoint", lambda m, x: m.from_numpy(_Q_INPUT.copy()).quantile(0.4, 1, interpolation="midpoint")),
    ("quantile nearest", lambda m, x: m.from_numpy(_Q_INPUT.copy()).quantile(
        m.tensor([0.125, 0.375, 0.5]), 1, interpolation="nearest")),
    ("quantile none keepdim", lambda m, x: m.from_numpy(_Q_INPUT[2:].copy()).quantile(0.5, keepdim=True)),
]


@pytest.mark.parametrize("case", range(len(REDUCTIONS)), ids=[c[0] for c in REDUCTIONS])
def test_mode_and_quantile_match_torch(case):
    name, f = REDUCTIONS[case]
    want, got = f(torch, None), f(lt, None)
    for w, g in zip(want if isinstance(want, tuple) else [want], got if isinstance(got, tuple) else [got]):
        assert tuple(g.shape) == tuple(w.shape), name
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, equal_nan=True, err_msg=name)


@pytest.mark.parametrize("dims", [2, 1, 0, ([2, 1], [1, 0]), ([2], [1])])
def test_tensordot_matches_torch_with_gradients(dims, rng):
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = rng.standard_normal((3, 4, 3) if dims != 0 else (2, 2)).astype(np.float32)
    if dims == 1:
        b = rng.standard_normal((4, 5)).astype(np.float32)
    outs = []
    for m in (torch, lt):
        x, y = m.from_numpy(a.copy()).requires_grad_(), m.from_numpy(b.copy()).requires_grad_()
        out = m.tensordot(x, y, dims=dims)
        (out * out).sum().backward()
        outs.append((out.detach().numpy(), x.grad.numpy(), y.grad.numpy()))
    for g, w in zip(outs[1], outs[0]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
