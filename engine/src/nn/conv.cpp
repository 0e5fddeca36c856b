// conv2d and the 2-d pools, over windows of the input: one strided view of it
// (windows_2d), whose gradient adds each window element back where it read.
#include <algorithm>
#include <cmath>
#include <limits>

#include "loom/autograd.h"
#include "nn/conv_products.h"
#include "nn/nn_util.h"
#include "nn/windows.h"
#include "tensor/ops_util.h"
#include "tensor/record.h"

namespace loom::nn {

using namespace detail;

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

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
    // Windows that overlap (all but 1x1 kernels at stride 1; kernels wider
    // than the stride, undilated, at a larger one): the input gradient is
    // convolutions of the output gradient (overlapping_product); elsewhere,
    // where each element is read once or a dilated phase would be uneven, the
    // windows' gradient is added back.
    const bool unit = stride.h == 1 && stride.w == 1;
    if ((unit && (k.h > 1 || k.w > 1)) || (!unit && !dilated && (k.h > stride.h || k.w > stride.w))) {
      r = overlapping_product(up(x), ws, {k, stride, dilation, pad_lo, pad_hi});
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
