// tensor::mul_add: a * b + c with one rounding (the MULADD node), as torch's
// CPU kernels fuse batch_norm's x * alpha + beta.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/testing/values.h"
#include "loom/autograd.h"
#include "loom/tensor.h"
#include "tensor/ops_util.h"

namespace loom {
namespace {

// tensor::mul_add (batch_norm's y = x * alpha + beta, as torch's CPU kernel
// fuses it): a * b + c with one rounding, broadcast, on every device and on
// scalars and vector lanes alike; its gradients are the product's and the
// sum's.
TEST(MulAdd, TheElementwiseOpRoundsOnce) {
  const int64_t rows = 3, cols = 40;
  const Tensor a = Tensor::randn({rows, cols}).realize(), b = Tensor::randn({cols}).realize();
  const Tensor c = Tensor::randn({rows, 1}).realize();
  const std::vector<float> av = testing::float_values(a), bv = testing::float_values(b), cv = testing::float_values(c);
  const std::vector<float> got = testing::float_values(tensor::mul_add(a, b, c));
  ASSERT_EQ(got.size(), static_cast<size_t>(rows * cols));
  int rounded_twice_differs = 0;
  for (int64_t i = 0; i < rows * cols; ++i) {
    const auto r = static_cast<size_t>(i / cols), k = static_cast<size_t>(i % cols), j = static_cast<size_t>(i);
    const float want = std::fmaf(av[j], bv[k], cv[r]);
    EXPECT_EQ(got[j], want) << "element " << i;
    rounded_twice_differs += av[j] * bv[k] + cv[r] != want;
  }
  EXPECT_GT(rounded_twice_differs, 0) << "the inputs tell one rounding from two";

  // (1 + 2^-13)^2 - (1 + 2^-12) is 2^-26 exactly; two roundings give 0.
  const Tensor x = Tensor::full({1}, 1 + 0x1p-13), y = Tensor::full({1}, -(1 + 0x1p-12));
  EXPECT_EQ(testing::float_values(tensor::mul_add(x, x, y))[0], 0x1p-26f);

  Tensor ga = a.detach().requires_grad_(), gb = b.detach().requires_grad_(), gc = c.detach().requires_grad_();
  const std::vector<Tensor> g = autograd::grad({tensor::mul_add(ga, gb, gc).sum()}, {ga, gb, gc});
  EXPECT_EQ(g[0].shape(), a.shape());
  EXPECT_EQ(testing::float_values(g[0]), testing::float_values(b.expand({rows, cols})));
  EXPECT_EQ(testing::float_values(g[1]), testing::float_values(a.sum({0})));
  EXPECT_EQ(testing::float_values(g[2]), std::vector<float>(rows, static_cast<float>(cols)));
}

}  // namespace
}  // namespace loom
