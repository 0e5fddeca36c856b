// A 2-d window's view of an image (conv2d's and the pools' input) and its
// gradient: each window element added back where it was read.
#pragma once
#include "loom/nn.h"
#include "loom/tensor.h"
#include "shape/shape_tracker.h"

namespace loom::nn::detail {

// t's value stored row-major once (a differentiable identity), so that several
// shifted reads of it load it instead of each computing it again.
Tensor stored(const Tensor &t);

// A view of (N, C, OH, OW) with element [.., i, j] moved to [.., off.h + i *
// s.h, off.w + j * s.w] of (N, C, size.h, size.w), zeros elsewhere: a window
// position's gradient placed back where the window read. One pad for both
// dims (a pad over a pad stacks views, which costs index arithmetic).
shape::ShapeTracker placed(shape::ShapeTracker st, Pair2 s, Pair2 off, Pair2 size);

// x (N, C, H, W), zero-padded by lo before and hi after each spatial dim, ->
// (N, C, Ho, Wo, kh, kw), element [n, c, i, j, a, b] = padded x[n, c, i*s.h +
// a*d.h, j*s.w + b*d.w]: one strided view of x stored row-major (its windows
// overlap where the stride is below the window), over the padding's masked
// view of it, so the padded copy is never stored. The gradient adds each
// window element's back where it was read (unwindows_2d).
Tensor windows_2d(const Tensor &x, Pair2 k, Pair2 s, Pair2 d, Pair2 lo = Pair2(0, 0), Pair2 hi = Pair2(0, 0));

}  // namespace loom::nn::detail
