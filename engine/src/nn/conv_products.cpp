#include "nn/conv_products.h"

#include <algorithm>
#include <array>
#include <vector>

#include "loom/autograd.h"
#include "nn/windows.h"
#include "tensor/ops_util.h"
#include "tensor/record.h"
#include "uop/graph.h"

namespace loom::nn::detail {

namespace {

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

// x (N, C, H, W) cut into the windows channels_and_taps reads, (N, groups,
// 1, C/groups, Ho, Wo, kh, kw).
Tensor grouped_windows(const Tensor &x, const ConvWindows &c, int64_t groups) {
  const Tensor win = windows_2d(x, c.k, c.s, c.d, c.lo, c.hi);
  return win.reshape({win.size(0), groups, 1, win.size(1) / groups, win.size(2), win.size(3), c.k.h, c.k.w});
}

// The stride-1 correlation of the output gradient g (N, g, O/g, Ho, Wo),
// padded by lo before and hi after each spatial dim (cut where negative),
// with the weights ws (1, g, O/g, C/g, 1, 1, kh, kw) flipped along their
// taps and with their channels swapped (1, g, C/g, O/g, 1, 1, kh, kw), a
// view, dilated by d: (N, C, ., .). One GEMM over windows of g, which the
// GEMM split reads in place where it gathers (the forward's path: cuDNN,
// the tensor-core template).
Tensor correlate(const Tensor &g, const Tensor &ws, Pair2 d, Pair2 lo, Pair2 hi) {
  const Shape &gs = g.shape();
  const int64_t groups = gs[1], n = gs[0], o = gs[1] * gs[2], ho = gs[3], wo = gs[4];
  const auto cut = [](int64_t pad) { return std::max<int64_t>(0, -pad); };
  const auto pad = [](int64_t pad) { return std::max<int64_t>(0, pad); };
  const Tensor gy = g.reshape({n, o, ho, wo})
                        .shrink({{0, n}, {0, o}, {cut(lo.h), ho - cut(hi.h)}, {cut(lo.w), wo - cut(hi.w)}});
  const Pair2 k(ws.size(6), ws.size(7));
  const Tensor gw = grouped_windows(gy, {k, Pair2(1, 1), d, Pair2(pad(lo.h), pad(lo.w)), Pair2(pad(hi.h), pad(hi.w))}, groups);
  const uop::UOpRef swapped = ws.permute({0, 1, 3, 2, 4, 5, 6, 7}).uop();
  std::vector<bool> taps(8, false);
  taps[6] = taps[7] = true;
  const Tensor flipped = tensor::make_tensor(uop::view(swapped, uop::tracker_of(swapped).flip(taps)));
  const Tensor sum = channels_and_taps(gw, flipped);  // (N, g, C/g, ., .)
  const Shape &s = sum.shape();
  return sum.reshape({n, s[1] * s[2], s[3], s[4]});
}

// floor(a / b) for b > 0.
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// One spatial dim of a strided convolution's input gradient, over the
// phase r of the input (length n): the positions p with (p + lo) % s == r,
// p = q s + r - lo for `count` q from q0 (the first p `first`), each the
// sum over the taps a = r + j s, j < `taps`, of g[q - j] w[a], g zero
// outside [0, Ho): the stride-1 correlation of g, padded by `lo` = taps - 1
// - q0 before and `hi` after, with those taps flipped.
struct PhaseDim {
  int64_t taps = 0, count = 0, first = 0, lo = 0, hi = 0;
};
PhaseDim phase_dim(int64_t n, int64_t ho, int64_t k, int64_t s, int64_t lo, int64_t r) {
  PhaseDim p;
  p.taps = r < k ? (k - r + s - 1) / s : 0;
  const int64_t q0 = floor_div(lo - r + s - 1, s), q1 = floor_div(n - 1 + lo - r, s);
  p.count = q1 - q0 + 1;
  p.first = q0 * s + r - lo;
  p.lo = p.taps - 1 - q0;
  p.hi = p.count + p.taps - 1 - p.lo - ho;
  return p;
}

// The input gradient (N, C, size.h, size.w) of the convolution over windows
// c with weights ws, given its output gradient g (N, g, O/g, Ho, Wo). At
// stride 1 it is itself a stride-1 convolution (what cuDNN's backward data
// computes): of g padded by each window's reach (k - 1) d less the
// forward's padding. At a larger stride (no dilation) each phase of the
// input (PhaseDim, per spatial dim) is one such correlation with the taps of
// its phase, placed every s-th position, and the gradient their sum: s.h *
// s.w GEMMs over windows of g (a 3 x 3 kernel at stride 2: 4, 2, 2 and 1
// taps), no windows' gradient stored and added back tap by tap.
Tensor input_gradient(const Tensor &g, const Tensor &ws, const ConvWindows &c, Pair2 size) {
  if (c.s.h == 1 && c.s.w == 1) {
    const Pair2 reach((c.k.h - 1) * c.d.h, (c.k.w - 1) * c.d.w);
    return correlate(g, ws, c.d, Pair2(reach.h - c.lo.h, reach.w - c.lo.w), Pair2(reach.h - c.hi.h, reach.w - c.hi.w));
  }
  uop::UOpRef sum;
  for (int64_t rh = 0; rh < c.s.h; rh++)
    for (int64_t rw = 0; rw < c.s.w; rw++) {
      const PhaseDim ph = phase_dim(size.h, g.size(3), c.k.h, c.s.h, c.lo.h, rh),
                     pw = phase_dim(size.w, g.size(4), c.k.w, c.s.w, c.lo.w, rw);
      if (ph.taps == 0 || pw.taps == 0 || ph.count <= 0 || pw.count <= 0) continue;  // zeros there
      const Tensor taps = ws.slice(6, rh, c.k.h, c.s.h).slice(7, rw, c.k.w, c.s.w);
      const uop::UOpRef part = correlate(g, taps, Pair2(1, 1), Pair2(ph.lo, pw.lo), Pair2(ph.hi, pw.hi)).uop();
      const uop::UOpRef v = uop::view(part, placed(uop::tracker_of(part), c.s, Pair2(ph.first, pw.first), size));
      sum = sum ? uop::alu(uop::Op::Add, sum, v) : v;
    }
  if (!sum) return Tensor::zeros({g.size(0), ws.size(1) * ws.size(3), size.h, size.w}, g.dtype());
  return tensor::make_tensor(sum);
}

}  // namespace

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

Tensor overlapping_product(const Tensor &xu, const Tensor &ws, const ConvWindows &c) {
  constexpr const char *kNode = "ConvolutionBackward0";
  const int64_t groups = ws.size(1);
  return autograd::apply(
      kNode, {xu, ws}, [&] { return channels_and_taps(grouped_windows(xu, c, groups), ws); },
      [x = autograd::Saved(xu, kNode, ws.requires_grad()), w = autograd::Saved(ws, kNode, xu.requires_grad()),
       needs = std::array<bool, 2>{xu.requires_grad(), ws.requires_grad()}, c, groups,
       size = Pair2(xu.size(2), xu.size(3))](const Tensor &g, const Tensor &) {
        tensor::RowMajorScope row_major;
        autograd::Grads grads(2);
        if (needs[0]) grads[0] = input_gradient(g, w.get(), c, size);
        if (needs[1]) grads[1] = weight_gradient(g, grouped_windows(x.get(), c, groups));
        return grads;
      });
}

}  // namespace loom::nn::detail
