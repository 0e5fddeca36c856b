#include "nn/windows.h"

#include <algorithm>
#include <array>
#include <vector>

#include "loom/autograd.h"
#include "tensor/ops_util.h"
#include "tensor/record.h"
#include "uop/graph.h"

namespace loom::nn::detail {

namespace {

// Output length of a window of size k, stride s, dilation d over length n.
int64_t out_len(int64_t n, int64_t k, int64_t s, int64_t d) { return (n - d * (k - 1) - 1) / s + 1; }

// A windows' gradient as unwindows_2d reads it: itself where it is a view of
// a node stored on its own (conv2d's, stored in the order its GEMM writes),
// else stored row-major.
Tensor stored_windows(const Tensor &g) {
  return uop::base_of(g.uop())->op == uop::Op::Contiguous ? g : stored(g);
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

}  // namespace

Tensor stored(const Tensor &t) {
  return autograd::apply(
      "CloneBackward0", {t}, [&] { return tensor::make_tensor(tensor::row_major(t.uop())); },
      [](const Tensor &g, const Tensor &) { return autograd::Grads{g}; });
}

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

Tensor windows_2d(const Tensor &x, Pair2 k, Pair2 s, Pair2 d, Pair2 lo, Pair2 hi) {
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

}  // namespace loom::nn::detail
