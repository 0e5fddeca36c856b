// conv2d and the 2-d pools, over windows of the input: one strided view of it
// (windows_2d), whose gradient adds each window element back where it read.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "loom/autograd.h"
#include "nn/nn_util.h"
#include "tensor/ops_util.h"
#include "tensor/record.h"
#include "uop/graph.h"

namespace loom::nn {

using namespace detail;

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Output length of a window of size k, stride s, dilation d over length n.
int64_t out_len(int64_t n, int64_t k, int64_t s, int64_t d) { return (n - d * (k - 1) - 1) / s + 1; }

// t's value stored row-major once (a differentiable identity), so that several
// shifted reads of it load it instead of each computing it again.
Tensor stored(const Tensor &t) {
  return autograd::apply(
      "CloneBackward0", {t}, [&] { return tensor::make_tensor(tensor::row_major(t.uop())); },
      [](const Tensor &g, const Tensor &) { return autograd::Grads{g}; });
}

// A windows' gradient as unwindows_2d reads it: itself where it is a view of
// a node stored on its own (conv2d's, stored in the order its GEMM writes),
// else stored row-major.
Tensor stored_windows(const Tensor &g) {
  return uop::base_of(g.uop())->op == uop::Op::Contiguous ? g : stored(g);
}

// A view of (N, C, OH, OW) with element [.., i, j] moved to [.., off.h + i *
// s.h, off.w + j * s.w] of (N, C, size.h, size.w), zeros elsewhere: a window
// position's gradient placed back where the window read. One pad for both
// dims (a pad over a pad stacks views, which costs index arithmetic).
shape::ShapeTracker placed(shape::ShapeTracker st, Pair2 s, Pair2 off, Pair2 size) {
  for (int64_t axis : {2, 3}) {
    const int64_t stride = axis == 2 ? s.h : s.w;
    if (stride == 1) continue;
    // (o) -> (o, 1) -> (o, stride) -> (o * stride): element i at i * stride
    Shape merged = st.shape(), spread = st.shape();
    merged[static_cast<size_t>(axis)] *= stride;
    spread.insert(spread.begin() + axis + 1, 1);
    std::vector<std::pair<int64_t, int64_t>> pads(5, {0, 0});
    pads[static_cast<size_t>(axis) + 1] = {0, stride - 1};
    st = st.reshape(spread).pad(pads).reshape(merged);
  }
  // Only zeros of a spread fall past the end.
  const Shape &now = st.shape();
  const int64_t h = std::min(now[2], size.h - off.h), w = std::min(now[3], size.w - off.w);
  if (h < now[2] || w < now[3]) st = st.shrink({{0, now[0]}, {0, now[1]}, {0, h}, {0, w}});
  return st.pad({{0, 0}, {0, 0}, {off.h, size.h - off.h - h}, {off.w, size.w - off.w - w}});
}

// unwindows_2d's views of `whole` (g's tracker), one per window element.
std::vector<shape::ShapeTracker> window_parts(const shape::ShapeTracker &whole, Pair2 k, Pair2 s, Pair2 d, Pair2 lo,
                                              Pair2 hi, Pair2 padded) {
  const Shape &gs = whole.shape();
  const int64_t n = gs[0], c = gs[1], oh = gs[2], ow = gs[3];
  std::vector<shape::ShapeTracker> parts;
  parts.reserve(static_cast<size_t>(k.h * k.w));
  for (int64_t a = 0; a < k.h; ++a)
    for (int64_t b = 0; b < k.w; ++b) {
      shape::ShapeTracker part = whole.shrink({{0, n}, {0, c}, {0, oh}, {0, ow}, {a, a + 1}, {b, b + 1}});
      parts.push_back(placed(part.reshape({n, c, oh, ow}), s, Pair2(a * d.h, b * d.w), padded)
                          .shrink({{0, n}, {0, c}, {lo.h, padded.h - hi.h}, {lo.w, padded.w - hi.w}}));
    }
  return parts;
}

// window_parts, remembered for the last few argument lists of this thread: a
// training step asks for each convolution's every step. (Trackers share their
// views until written: the copies handed out cost no allocation.)
const std::vector<shape::ShapeTracker> &window_parts_cached(const shape::ShapeTracker &whole, Pair2 k, Pair2 s,
                                                            Pair2 d, Pair2 lo, Pair2 hi, Pair2 padded) {
  struct Entry {
    shape::ShapeTracker whole;
    std::array<int64_t, 12> args{};
    std::vector<shape::ShapeTracker> parts;
  };
  constexpr size_t kKept = 16;
  thread_local std::array<Entry, kKept> kept;
  thread_local size_t next = 0;
  const std::array<int64_t, 12> args{k.h, k.w, s.h, s.w, d.h, d.w, lo.h, lo.w, hi.h, hi.w, padded.h, padded.w};
  for (const Entry &e : kept)
    if (!e.parts.empty() && e.args == args && e.whole == whole) return e.parts;
  Entry &e = kept[next++ % kKept];
  e.parts = window_parts(whole, k, s, d, lo, hi, padded);
  e.whole = whole;
  e.args = args;
  return e.parts;
}

// windows_2d's gradient where windows overlap (its adjoint): g (N, C, Ho,
// Wo, kh, kw), stored (stored_windows), -> (N, C, H, W), each window element
// added back where it was read. Built as graph nodes directly, not through
// tensor ops (a backward runs without recording, so there is nothing to
// record): kh * kw views of g (one per window element, shifted and, for
// strides over 1, spread; the padding cut off) and their elementwise sum,
// one kernel.
Tensor unwindows_2d(const Tensor &g, Pair2 k, Pair2 s, Pair2 d, Pair2 lo, Pair2 hi, Pair2 padded) {
  const uop::UOpRef &src = g.uop();
  uop::UOpRef sum;
  for (const shape::ShapeTracker &part : window_parts_cached(uop::tracker_of(src), k, s, d, lo, hi, padded)) {
    uop::UOpRef v = uop::view(src, part);
    sum = sum ? uop::alu(uop::Op::Add, sum, v) : v;
  }
  return tensor::make_tensor(sum);
}

// x (N, C, H, W), zero-padded by lo before and hi after each spatial dim, ->
// (N, C, Ho, Wo, kh, kw), element [n, c, i, j, a, b] = padded x[n, c, i*s.h +
// a*d.h, j*s.w + b*d.w]: one strided view of x stored row-major (its windows
// overlap where the stride is below the window), over the padding's masked
// view of it, so the padded copy is never stored. The gradient adds each
// window element's back where it was read (unwindows_2d).
Tensor windows_2d(const Tensor &x, Pair2 k, Pair2 s, Pair2 d, Pair2 lo = Pair2(0, 0), Pair2 hi = Pair2(0, 0)) {
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2) + lo.h + hi.h, w = x.size(3) + lo.w + hi.w;
  const int64_t oh = out_len(h, k.h, s.h, d.h), ow = out_len(w, k.w, s.w, d.w);
  const Shape shape = {n, c, oh, ow, k.h, k.w};
  const bool padded = lo.h || lo.w || hi.h || hi.w;
  const auto unpad = [=](const Tensor &g) {
    return padded ? g.shrink({{0, n}, {0, c}, {lo.h, h - hi.h}, {lo.w, w - hi.w}}) : g;
  };
  return autograd::apply(
      "WindowsBackward", {x},
      [&] {
        // A stride or dilation over a dim of one window or one element is
        // never used (and may be huge): 0 there; elsewhere it stays in the input.
        const auto step = [](int64_t count, int64_t by) { return count <= 1 ? 0 : by; };
        const shape::View v = shape::View::create(
            shape, shape::Strides{c * h * w, h * w, step(oh, s.h) * w, step(ow, s.w), step(k.h, d.h) * w, step(k.w, d.w)});
        shape::ShapeTracker st{{v}};
        if (padded) {
          st = shape::ShapeTracker::from_shape(x.shape()).pad({{0, 0}, {0, 0}, {lo.h, hi.h}, {lo.w, hi.w}});
          st.views.push_back(v);
        }
        return tensor::make_tensor(uop::view(tensor::row_major(x.uop()), st));
      },
      [=](const Tensor &grad, const Tensor &) {
        if (s.h == k.h && s.w == k.w && d.h == 1 && d.w == 1) {  // windows tile the input: each element read once
          const Tensor g = stored(grad);
          return autograd::Grads{unpad(g.permute({0, 1, 2, 4, 3, 5})
                                           .reshape({n, c, oh * k.h, ow * k.w})
                                           .pad({{0, 0}, {0, 0}, {0, h - oh * k.h}, {0, w - ow * k.w}}))};
        }
        // Stored: read by several reductions (a norm's backward).
        return autograd::Grads{stored(unwindows_2d(stored_windows(grad), k, s, d, lo, hi, Pair2(h, w)))};
      });
}

// The convolution's sum over channels and taps, xs (N, g, 1, C/g, Ho, Wo,
// kh, kw) * ws (1, g, O/g, C/g, 1, 1, kh, kw) summed over C/g, kh, kw, as one
// node.
Tensor channels_and_taps(const Tensor &xs, const Tensor &ws) { return xs.mul(ws).sum({3, 6, 7}); }

// The weights' gradient: the sum over N, Ho, Wo of the output gradient g
// (N, g, O/g, Ho, Wo) times the windows xs.
Tensor weight_gradient(const Tensor &g, const Tensor &xs) {
  const Shape &gs = g.shape();
  return g.reshape({gs[0], gs[1], gs[2], 1, gs[3], gs[4], 1, 1}).mul(xs).sum({0, 4, 5}, true);
}

// channels_and_taps with autograd's gradients. The windows' gradient, the
// sum over O/g of the output gradient times the weights, is computed in the
// order (N, g, C/g, kh, kw, Ho, Wo): per image the product of the weights,
// read in place transposed, and the output gradient's (O/g, Ho * Wo) rows,
// which a GEMM writes as it is stored; unwindows_2d then reads each tap's
// rows along the image.
Tensor windows_product(const Tensor &xs, const Tensor &ws) {
  constexpr const char *kNode = "ConvolutionBackward0";
  return autograd::apply(
      kNode, {xs, ws}, [&] { return channels_and_taps(xs, ws); },
      [x = autograd::Saved(xs, kNode, ws.requires_grad()), w = autograd::Saved(ws, kNode, xs.requires_grad()),
       needs = std::array<bool, 2>{xs.requires_grad(), ws.requires_grad()}](const Tensor &g, const Tensor &) {
        tensor::RowMajorScope row_major;
        autograd::Grads grads(2);
        const Shape &gs = g.shape();  // (N, g, O/g, Ho, Wo)
        if (needs[0]) {
          const Tensor wv = w.get();
          const Tensor a = g.permute({0, 1, 3, 4, 2}).reshape({gs[0], gs[1], 1, 1, 1, gs[3], gs[4], gs[2]});
          const Tensor sum = a.mul(wv.permute({0, 1, 3, 6, 7, 4, 5, 2})).sum({7});  // (N, g, C/g, kh, kw, Ho, Wo)
          grads[0] = stored(sum).permute({0, 1, 2, 5, 6, 3, 4}).unsqueeze(2);
        }
        if (needs[1]) grads[1] = weight_gradient(g, x.get());
        return grads;
      });
}

// A stride-1 convolution's windows: kernel k, dilation d, padding lo before
// and hi after each spatial dim.
struct Stride1 {
  Pair2 k, d, lo, hi;
};

// x (N, C, H, W) cut into the windows channels_and_taps reads, (N, groups,
// 1, C/groups, Ho, Wo, kh, kw).
Tensor grouped_windows(const Tensor &x, const Stride1 &c, int64_t groups) {
  const Tensor win = windows_2d(x, c.k, Pair2(1, 1), c.d, c.lo, c.hi);
  return win.reshape({win.size(0), groups, 1, win.size(1) / groups, win.size(2), win.size(3), c.k.h, c.k.w});
}

// The input gradient of a stride-1 convolution, itself a stride-1
// convolution (what cuDNN's backward data computes): of the output gradient
// g (N, g, O/g, Ho, Wo), padded by each window's reach (kh - 1) * dh less
// the forward's padding (cut where that is negative), and the weights ws
// flipped along their taps with their channels swapped, (1, g, C/g, O/g, 1,
// 1, kh, kw), a view. One GEMM over windows of g, which the GEMM split reads
// in place where it gathers (the forward's path: cuDNN, the tensor-core
// template); no windows' gradient is stored and added back tap by tap.
Tensor input_gradient(const Tensor &g, const Tensor &ws, const Stride1 &c) {
  const Shape &gs = g.shape();
  const int64_t groups = gs[1], n = gs[0], o = gs[1] * gs[2], ho = gs[3], wo = gs[4];
  const Pair2 reach((c.k.h - 1) * c.d.h, (c.k.w - 1) * c.d.w);
  const Pair2 lo(reach.h - c.lo.h, reach.w - c.lo.w), hi(reach.h - c.hi.h, reach.w - c.hi.w);
  const auto cut = [](int64_t pad) { return std::max<int64_t>(0, -pad); };
  const auto pad = [](int64_t pad) { return std::max<int64_t>(0, pad); };
  const Tensor gy = g.reshape({n, o, ho, wo})
                        .shrink({{0, n}, {0, o}, {cut(lo.h), ho - cut(hi.h)}, {cut(lo.w), wo - cut(hi.w)}});
  const Tensor gw = grouped_windows(gy, {c.k, c.d, Pair2(pad(lo.h), pad(lo.w)), Pair2(pad(hi.h), pad(hi.w))}, groups);
  const uop::UOpRef swapped = ws.permute({0, 1, 3, 2, 4, 5, 6, 7}).uop();
  std::vector<bool> taps(8, false);
  taps[6] = taps[7] = true;
  const Tensor flipped = tensor::make_tensor(uop::view(swapped, uop::tracker_of(swapped).flip(taps)));
  const Tensor sum = channels_and_taps(gw, flipped);  // (N, g, C/g, H, W)
  const Shape &s = sum.shape();
  return sum.reshape({n, s[1] * s[2], s[3], s[4]});
}

// channels_and_taps of a stride-1 convolution whose windows overlap, with
// xu (N, C, H, W) as its input: its input gradient is input_gradient's
// convolution, not the windows' gradient added back.
Tensor stride1_product(const Tensor &xu, const Tensor &ws, const Stride1 &c) {
  constexpr const char *kNode = "ConvolutionBackward0";
  const int64_t groups = ws.size(1);
  return autograd::apply(
      kNode, {xu, ws}, [&] { return channels_and_taps(grouped_windows(xu, c, groups), ws); },
      [x = autograd::Saved(xu, kNode, ws.requires_grad()), w = autograd::Saved(ws, kNode, xu.requires_grad()),
       needs = std::array<bool, 2>{xu.requires_grad(), ws.requires_grad()}, c, groups](const Tensor &g, const Tensor &) {
        tensor::RowMajorScope row_major;
        autograd::Grads grads(2);
        if (needs[0]) grads[0] = input_gradient(g, w.get(), c);
        if (needs[1]) grads[1] = weight_gradient(g, grouped_windows(x.get(), c, groups));
        return grads;
      });
}

std::string pair_str(Pair2 p) { return "(" + std::to_string(p.h) + ", " + std::to_string(p.w) + ")"; }

// The dtypes torch's kernels take: conv2d every number type, avg_pool2d the
// floating ones and int64, the other pools the floating ones.
using DTypeCheck = void (*)(const Tensor &, const char *op, const char *what);
void require_float_or_int64(const Tensor &t, const char *op, const char *what) {
  if (t.dtype() != DType::Int64) require_float(t, op, what);
}

// Accepts (N, C, H, W) or (C, H, W); returns the 4-d form.
Tensor batched(const Tensor &x, const char *op, DTypeCheck check_dtype = require_float) {
  if (x.ndim() != 3 && x.ndim() != 4)
    throw Error(std::string(op) + ": Expected 3D (unbatched) or 4D (batched) input, but got input of size: " +
                shape_of(x));
  check_dtype(x, op, "input");
  return x.ndim() == 3 ? x.unsqueeze(0) : x;
}

Tensor unbatched_like(const Tensor &r, const Tensor &input) { return input.ndim() == 3 ? r.squeeze({0}) : r; }

void check_positive(Pair2 p, const char *op, const char *what) {
  if (p.h <= 0 || p.w <= 0) throw Error(std::string(op) + ": " + what + " must be greater than zero, got " + pair_str(p));
}

int64_t checked_add(int64_t a, int64_t b, const char *op) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    throw Error(std::string(op) + ": " + std::to_string(a) + " + " + std::to_string(b) + " overflows int64");
  return r;
}
int64_t checked_mul(int64_t a, int64_t b, const char *op) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    throw Error(std::string(op) + ": " + std::to_string(a) + " * " + std::to_string(b) + " overflows int64");
  return r;
}

// One spatial dim of a pool over a real length n: kernel k, stride s, padding
// p on both sides, dilation d.
struct PoolDim {
  int64_t n, k, s, p, d;
  bool ceil_mode;
  // torch's pooling_output_shape: in ceil mode a last window that would start
  // in the right padding is dropped.
  // In 128 bits: user sizes anywhere in int64 cannot overflow it. A kernel
  // wider than the padded input gives an output below 1 (pool_dims raises).
  int64_t out() const {
    using Wide = __int128;
    const Wide span = Wide(n) + 2 * Wide(p) - Wide(d) * (Wide(k) - 1) - 1 + (ceil_mode ? Wide(s) - 1 : 0);
    Wide o = (span >= 0 ? span / s : -((-span + s - 1) / s)) + 1;
    if (ceil_mode && (o - 1) * s >= Wide(n) + p) --o;
    return static_cast<int64_t>(std::clamp<Wide>(o, INT64_MIN, INT64_MAX));
  }
  // Ceil mode: padding past the right padding so the last window fits.
  int64_t extra() const { return std::max<int64_t>(0, (out() - 1) * s + d * (k - 1) + 1 - (n + 2 * p)); }
  int64_t start(int64_t i) const { return i * s - p; }
};

// torch's pool checks, in its words. Returns the (h, w) dims.
std::pair<PoolDim, PoolDim> pool_dims(const Tensor &input, const Tensor &x4, Pair2 k, Pair2 s, Pair2 p, Pair2 d,
                                      bool ceil_mode, const char *op) {
  const std::string pre = std::string(op) + ": ";
  if (k.h <= 0 || k.w <= 0)
    throw Error(pre + "kernel size should be greater than zero, but got kH: " + std::to_string(k.h) +
                " kW: " + std::to_string(k.w));
  if (s.h == 0 || s.w == 0) throw Error(pre + "stride should not be zero");
  if (s.h < 0 || s.w < 0)
    throw Error(pre + "stride should be greater than zero, but got dH: " + std::to_string(s.h) +
                " dW: " + std::to_string(s.w));
  if (d.h <= 0 || d.w <= 0)
    throw Error(pre + "dilation should be greater than zero, but got dilationH: " + std::to_string(d.h) +
                " dilationW: " + std::to_string(d.w));
  for (auto [pad, ker] : {std::pair{p.h, k.h}, std::pair{p.w, k.w}}) {
    if (pad < 0) throw Error(pre + "pad must be non-negative, but got pad: " + std::to_string(pad));
    if (pad > ker / 2)
      throw Error(pre + "pad should be at most half of kernel size, but got pad=" + std::to_string(pad) +
                  " and kernel_size=" + std::to_string(ker));
  }
  for (int64_t i = 1; i < 4; ++i)
    if (x4.size(i) == 0)
      throw Error(pre + "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got: " +
                  shape_of(input));
  const PoolDim h{x4.size(2), k.h, s.h, p.h, d.h, ceil_mode}, w{x4.size(3), k.w, s.w, p.w, d.w, ceil_mode};
  if (h.out() < 1 || w.out() < 1) {
    const std::string c = std::to_string(x4.size(1));
    throw Error(pre + "Given input size: (" + c + "x" + std::to_string(h.n) + "x" + std::to_string(w.n) +
                "). Calculated output size: (" + c + "x" + std::to_string(h.out()) + "x" + std::to_string(w.out()) +
                "). Output size is too small");
  }
  return {h, w};
}

// Whether a 4-d tensor's strides suggest channels_last to torch (a 3-d one
// never does): torch's pools keep that memory format, its convolutions take it.
bool keeps_channels_last(const Tensor &input) {
  return input.ndim() == 4 && tensor::suggests_channels_last(input.shape(), input.strides());
}

// The sum of (N, C, Ho, Wo, ...) windows over their trailing `dims`, stored
// channels_last when `channels_last` (the sum runs over (N, Ho, Wo, C, ...)
// and is viewed back), else row-major.
Tensor sum_windows(const Tensor &win, const Dims &dims, bool channels_last) {
  if (!channels_last) return win.sum(dims);
  Dims order = {0, 2, 3, 1};
  for (int64_t d = 4; d < win.ndim(); ++d) order.push_back(d);
  return win.permute(order).sum(dims).permute({0, 3, 1, 2});
}

// x4 padded (reading pad_value) and cut into windows: (N, C, Ho, Wo, kh, kw).
Tensor pool_windows(const Tensor &x4, const PoolDim &h, const PoolDim &w, Scalar pad_value) {
  // No padding: x4 itself, not a select of it that windows_2d would store.
  const bool pads = h.p > 0 || w.p > 0 || h.extra() > 0 || w.extra() > 0;
  Tensor padded = pads ? x4.pad({{0, 0}, {0, 0}, {h.p, h.p + h.extra()}, {w.p, w.p + w.extra()}}, pad_value) : x4;
  Tensor win = windows_2d(padded, Pair2(h.k, w.k), Pair2(h.s, w.s), Pair2(h.d, w.d));
  LOOM_CHECK(win.size(2) == h.out() && win.size(3) == w.out(), "pool windows do not match torch's output size");
  return win;
}

// (o, k) of one dim: 1 where element j of window i reads the input, 0 where
// it reads padding.
Tensor reads_input(const PoolDim &dim) {
  std::vector<double> v;
  for (int64_t i = 0; i < dim.out(); ++i)
    for (int64_t j = 0; j < dim.k; ++j) {
      const int64_t at = dim.start(i) + j * dim.d;
      v.push_back(at >= 0 && at < dim.n ? 1 : 0);
    }
  return Tensor::from_vector(v, {dim.out(), dim.k}, DType::Bool);
}

// An integer window sum divided as torch's int64 kernel divides: C division,
// rounding toward zero.
Tensor divide_toward_zero(const Tensor &sum, const Tensor &divisor) {
  const Tensor zero = Tensor::zeros({}, sum.dtype());
  const Tensor q = sum.abs().floor_divide(divisor.abs());
  return sum.lt(zero).ne(divisor.lt(zero)).where(q.neg(), q);
}

// torch's avg_pool divisor along one dim: the window clipped to the padded
// input [-p, n + p), or without count_include_pad to the input [0, n).
std::vector<int64_t> avg_divisors(const PoolDim &dim, bool count_include_pad) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < dim.out(); ++i) {
    const int64_t b = dim.start(i), e = std::min(b + dim.k, dim.n + dim.p);
    v.push_back(count_include_pad ? e - b : std::min(e, dim.n) - std::max<int64_t>(b, 0));
  }
  return v;
}

}  // namespace

Tensor conv2d(const Tensor &input, const Tensor &weight, const std::optional<Tensor> &bias, Pair2 stride,
              Padding2 padding, Pair2 dilation, int64_t groups) {
  const char *op = "conv2d";
  Tensor x = batched(input, op, require_number);
  if (weight.ndim() != 4)
    throw Error("conv2d: Expected 4-dimensional weight for 4-dimensional input " + shape_of(x) +
                ", but got weight of size " + shape_of(weight));
  if (weight.dtype() != input.dtype() || (bias && bias->dtype() != input.dtype()))
    throw Error(std::string("conv2d: Input type (") + dtype_name(input.dtype()) + ") and weight type (" +
                dtype_name(weight.dtype()) + ")" + (bias ? std::string(" and bias type (") + dtype_name(bias->dtype()) + ")" : "") +
                " should be the same");
  if (groups <= 0) throw Error("conv2d: non-positive groups is not supported, got " + std::to_string(groups));
  check_positive(stride, op, "stride");
  check_positive(dilation, op, "dilation");
  const int64_t n = x.size(0), c = x.size(1), o = weight.size(0), cg = weight.size(1);
  const Pair2 k(weight.size(2), weight.size(3));
  if (o % groups != 0)
    throw Error("conv2d: Given groups=" + std::to_string(groups) + ", expected weight to be divisible by " +
                std::to_string(groups) + " at dimension 0, but got weight of size " + shape_of(weight));
  if (int64_t want = 0; __builtin_mul_overflow(cg, groups, &want) || want != c)
    throw Error("conv2d: Given groups=" + std::to_string(groups) + ", weight of size " + shape_of(weight) +
                ", expected input" + shape_of(x) + " to have " + (want == c ? "more than 2^63" : std::to_string(want)) +
                " channels, but got " + std::to_string(c) + " channels instead");
  if (bias && (bias->ndim() != 1 || bias->size(0) != o))
    throw Error("conv2d: Given weight of size " + shape_of(weight) + ", expected bias to be 1-dimensional with " +
                std::to_string(o) + " elements, but got bias of size " + shape_of(*bias));
  Pair2 pad_lo = padding.size, pad_hi = padding.size;
  if (padding.mode == "valid") {
    pad_lo = pad_hi = 0;
  } else if (padding.mode == "same") {
    if (stride.h != 1 || stride.w != 1) throw Error("conv2d: padding='same' is not supported for strided convolutions");
    const int64_t th = checked_mul(dilation.h, k.h - 1, op), tw = checked_mul(dilation.w, k.w - 1, op);
    pad_lo = Pair2(th / 2, tw / 2);
    pad_hi = Pair2(th - th / 2, tw - tw / 2);
  } else if (!padding.mode.empty()) {
    throw ValueError("conv2d: Invalid padding string '" + padding.mode + "', should be one of {'valid', 'same'}");
  } else if (padding.size.h < 0 || padding.size.w < 0) {
    throw Error("conv2d: negative padding is not supported, got " + pair_str(padding.size));
  }
  const int64_t hp = checked_add(checked_add(x.size(2), pad_lo.h, op), pad_hi.h, op),
                wp = checked_add(checked_add(x.size(3), pad_lo.w, op), pad_hi.w, op);
  const int64_t eh = checked_add(checked_mul(dilation.h, k.h - 1, op), 1, op),
                ew = checked_add(checked_mul(dilation.w, k.w - 1, op), 1, op);
  if (hp < eh || wp < ew)
    throw Error("conv2d: Calculated padded input size per channel: (" + std::to_string(hp) + " x " +
                std::to_string(wp) + "). Kernel size: (" + std::to_string(eh) + " x " + std::to_string(ew) +
                "). Kernel size can't be greater than actual input size");
  // A kernel dim of size 0 with a huge dilation spans a negative extent: the
  // output length, (padded - extent) / stride + 1, must still fit in int64.
  checked_add(hp, -eh, op);
  checked_add(wp, -ew, op);
  const DType dt = input.dtype();
  // torch's integer kernels: slow_conv2d takes every integer type, its dilated
  // path only int64; an input without batch or channels runs neither.
  const bool dilated = dilation.h != 1 || dilation.w != 1;
  if (dilated && !is_float(dt) && dt != DType::Int64 && n != 0 && c != 0)
    throw TypeError(std::string("conv2d: a dilated convolution is not implemented for dtype ") + dtype_name(dt));
  // (N, g, 1, C/g, Ho, Wo, kh, kw) * (1, g, O/g, C/g, 1, 1, kh, kw), summed over C/g, kh, kw.
  Tensor ws = up(weight).reshape({1, groups, o / groups, cg, 1, 1, k.h, k.w});
  Tensor r;
  {
    tensor::RowMajorScope scope;
    // Windows that overlap at stride 1 (all but 1x1 kernels): the input
    // gradient is a convolution of its own; elsewhere the windows' gradient
    // is added back (stride 2 would read three zeros of a spread output
    // gradient for each value).
    if (stride.h == 1 && stride.w == 1 && (k.h > 1 || k.w > 1)) {
      r = stride1_product(up(x), ws, {k, dilation, pad_lo, pad_hi});
    } else {
      Tensor win = windows_2d(up(x), k, stride, dilation, pad_lo, pad_hi);  // (N, C, Ho, Wo, kh, kw)
      r = windows_product(win.reshape({n, groups, 1, cg, win.size(2), win.size(3), k.h, k.w}), ws);
    }
    r = r.reshape({n, o, r.size(3), r.size(4)});
    if (bias) r = r.add(up(*bias).reshape({1, o, 1, 1}));
    r = r.cast(dt);
  }
  // torch lays the result out channels_last where the input or the weight
  // suggests it: computed as (O, N * Ho * Wo) products, as the row-major
  // result (the GEMM's faster orientation here), then stored so.
  if (keeps_channels_last(x) || keeps_channels_last(weight))
    r = tensor::laid_out(r, {0, 2, 3, 1}, "ConvolutionBackward0");
  // torch's node saves the input and the weight.
  return autograd::saves_inputs(unbatched_like(r, input), {input, weight}, "ConvolutionBackward0");
}

Tensor max_pool2d(const Tensor &input, Pair2 kernel_size, std::optional<Pair2> stride, Pair2 padding, Pair2 dilation,
                  bool ceil_mode) {
  Tensor x = batched(input, "max_pool2d");
  const auto [dh, dw] = pool_dims(input, x, kernel_size, stride.value_or(kernel_size), padding, dilation, ceil_mode,
                                  "max_pool2d");
  Tensor win = pool_windows(x, dh, dw, -std::numeric_limits<double>::infinity());
  const int64_t n = win.size(0), c = win.size(1), oh = win.size(2), ow = win.size(3), kk = dh.k * dw.k;
  Tensor flat = win.reshape({n, c, oh, ow, kk});
  // One element of each window passes its value (and gradient) through, the
  // one torch's scan `v > best || isnan(v)` keeps: the last NaN, else the
  // first maximum. Torch skips padding rather than reading -inf, so where
  // padding is read only input elements may win (it matters when the input's
  // maximum is -inf).
  Tensor pick;
  {
    autograd::NoGradGuard guard;
    Tensor v = flat.detach();
    Tensor hit = v.eq(v.amax({4}, true));
    if (dh.p > 0 || dw.p > 0 || dh.extra() > 0 || dw.extra() > 0) {
      Tensor real = reads_input(dh).reshape({oh, 1, dh.k, 1}).logical_and(reads_input(dw).reshape({1, ow, 1, dw.k}));
      hit = hit.logical_and(real.reshape({oh, ow, kk}));
    }
    // Scores: a NaN at j beats everything and later NaNs (kk + 1 + j); a
    // maximum at j beats later maxima (kk - j). Small integers, exact in
    // float32, which the kernels compute on vector lanes (int64 they do not).
    Tensor first = Tensor::arange(kk, 0, -1, DType::Float32).reshape({1, 1, 1, 1, kk});
    Tensor last = Tensor::arange(kk + 1, 2 * kk + 1, 1, DType::Float32).reshape({1, 1, 1, 1, kk});
    Tensor score = v.ne(v).where(last, hit.where(first, Tensor::zeros({}, DType::Float32)));
    // Each window's best score, stored once (one float per window): it names
    // the element picked, for the value and for the gradient.
    Tensor best = stored(score.amax({4}, true));
    pick = best.eq(first).logical_or(best.eq(last));
  }
  Tensor r = sum_windows(pick.where(flat, Tensor::zeros({}, flat.dtype())), {4}, keeps_channels_last(input));
  return unbatched_like(r, input);
}

Tensor avg_pool2d(const Tensor &input, Pair2 kernel_size, std::optional<Pair2> stride, Pair2 padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  Tensor x = batched(input, "avg_pool2d", require_float_or_int64);
  if (divisor_override && *divisor_override == 0) throw Error("avg_pool2d: divisor must be not zero");
  const auto [dh, dw] = pool_dims(input, x, kernel_size, stride.value_or(kernel_size), padding, 1, ceil_mode,
                                  "avg_pool2d");
  Tensor sum = sum_windows(pool_windows(up(x), dh, dw, is_float(x.dtype()) ? Scalar(0.0) : Scalar(0)), {4, 5},
                           keeps_channels_last(input));
  const bool integer = !is_float(sum.dtype());
  Tensor r;
  if (divisor_override) {
    r = integer ? divide_toward_zero(sum, Tensor::full({}, static_cast<long long>(*divisor_override), sum.dtype()))
                : sum.div(static_cast<double>(*divisor_override));
  } else {
    const std::vector<int64_t> vh = avg_divisors(dh, count_include_pad), vw = avg_divisors(dw, count_include_pad);
    std::vector<double> div;
    for (int64_t a : vh)
      for (int64_t b : vw) div.push_back(static_cast<double>(a * b));
    // One divisor for all windows (the usual case) stays a scalar.
    const bool uniform = std::all_of(div.begin(), div.end(), [&](double v) { return v == div[0]; });
    const Tensor divisor = uniform ? Tensor::full({}, static_cast<long long>(div[0]), sum.dtype())
                                   : Tensor::from_vector(div, {dh.out(), dw.out()}, sum.dtype());
    r = integer ? divide_toward_zero(sum, divisor) : uniform ? sum.div(div[0]) : sum.div(divisor);
  }
  return unbatched_like(r.cast(input.dtype()), input);
}

namespace {
// (out, len) matrix averaging the adaptive windows of one dim.
Tensor adaptive_matrix(int64_t out, int64_t len, DType dt) {
  std::vector<double> m = tensor::host_values(checked_mul(out, len, "adaptive_avg_pool2d"), "adaptive_avg_pool2d");
  for (int64_t i = 0; i < out; ++i) {
    const int64_t b = (i * len) / out, e = ceil_div((i + 1) * len, out);
    for (int64_t j = b; j < e; ++j) m[static_cast<size_t>(i * len + j)] = 1.0 / static_cast<double>(e - b);
  }
  return Tensor::from_vector(m, {out, len}, dt);
}
}  // namespace

Tensor adaptive_avg_pool2d(const Tensor &input, Pair2 output_size) {
  const char *op = "adaptive_avg_pool2d";
  Tensor x = batched(input, op);
  if (output_size.h < 0 || output_size.w < 0)
    throw Error("adaptive_avg_pool2d: output_size must be non-negative, got " + pair_str(output_size));
  for (int64_t d = 1; d < 4; ++d)
    if (x.size(d) == 0)
      throw Error("adaptive_avg_pool2d: Expected input to have non-zero size for non-batch dimensions, but input has sizes " +
                  shape_of(input) + " with dimension " + std::to_string(d - (input.ndim() == 3)) + " being empty");
  const DType ct = compute_dtype(x.dtype());
  Tensor ah = adaptive_matrix(output_size.h, x.size(2), ct);  // (oh, H)
  Tensor aw = adaptive_matrix(output_size.w, x.size(3), ct);  // (ow, W)
  Tensor r;
  if (keeps_channels_last(input)) {  // as torch: (N, oh, ow, C) viewed back
    const int64_t n = x.size(0), c = x.size(1), h = x.size(2);
    tensor::RowMajorScope scope;
    Tensor t = aw.matmul(up(x).permute({0, 2, 3, 1}));  // (N, H, ow, C)
    r = ah.matmul(t.reshape({n, h, output_size.w * c}))
            .reshape({n, output_size.h, output_size.w, c})
            .permute({0, 3, 1, 2});
  } else {
    r = ah.matmul(up(x)).matmul(aw.transpose(0, 1));
  }
  return unbatched_like(r.cast(input.dtype()), input);
}

}  // namespace loom::nn
