// The convolution's product over channels and taps with its gradients,
// conv2d's core (nn/conv.cpp): windows xs (N, g, 1, C/g, Ho, Wo, kh, kw)
// times weights ws (1, g, O/g, C/g, 1, 1, kh, kw), summed over C/g, kh and
// kw: (N, g, O/g, Ho, Wo).
#pragma once
#include "loom/nn.h"
#include "loom/tensor.h"

namespace loom::nn::detail {

// A convolution's windows over its input: kernel k, stride s, dilation d,
// padding lo before and hi after each spatial dim.
struct ConvWindows {
  Pair2 k, s, d, lo, hi;
};

// channels_and_taps with autograd's gradients. The windows' gradient, the
// sum over O/g of the output gradient times the weights, is computed in the
// order (N, g, C/g, kh, kw, Ho, Wo): per image the product of the weights,
// read in place transposed, and the output gradient's (O/g, Ho * Wo) rows,
// which a GEMM writes as it is stored; unwindows_2d then reads each tap's
// rows along the image.
Tensor windows_product(const Tensor &xs, const Tensor &ws);

// The product over xu (N, C, H, W) cut into windows c that overlap (a
// kernel over 1 at stride 1, or wider than a stride over 1 without
// dilation): its input gradient is a convolution of the output gradient at
// stride 1, one per phase of the input at a larger stride, not the windows'
// gradient added back.
Tensor overlapping_product(const Tensor &xu, const Tensor &ws, const ConvWindows &c);

}  // namespace loom::nn::detail
