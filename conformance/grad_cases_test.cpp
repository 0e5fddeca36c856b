// Gradients in cases the random properties keep away from, against libtorch:
// inputs whose forward is ill-defined enough that the properties avoid them,
// while torch's gradient formula is still fixed.
#include <gtest/gtest.h>

#include "compare.h"
#include "loom/autograd.h"
#include "reference.h"

namespace loom::conformance {
namespace {

HostTensor host(const std::vector<double> &v, const Shape &s, DType dt = DType::Float32) {
  HostTensor h = HostTensor::contiguous(dt, s);
  for (size_t i = 0; i < v.size(); ++i) h.set(static_cast<int64_t>(i), v[i]);
  return h;
}

// scatter with duplicate targets: one write survives, but torch's gradient
// reaches every duplicate in src (it reads the gradient at each target).
TEST(GradCases, ScatterWithDuplicateIndicesGivesTorchsGradient) {
  const HostTensor self = host({1, 2, 3, 4, 5, 6}, {2, 3});
  const HostTensor index = host({1, 0, 1, 1, 0, 1}, {2, 3}, DType::Int64);  // column 0: row 1 twice
  const HostTensor src = host({10, 20, 30, 40, 50, 60}, {2, 3});
  const HostTensor weight = host({1, -2, 3, -4, 5, -6}, {2, 3});
  const reference::Attrs attrs = reference::Attrs().set_int("dim", 0);
  const reference::GradResult want = reference::run_backward("scatter", {{self, {}}, {index, {}}, {src, {}}}, attrs, weight);

  Tensor s = Tensor::from_host(self).requires_grad_(), x = Tensor::from_host(src).requires_grad_();
  Tensor out = s.scatter(0, Tensor::from_host(index), x);
  auto g = autograd::grad({out.mul(Tensor::from_host(weight)).sum()}, {s, x});
  const Tolerance exact{0, 0};
  EXPECT_EQ(compare(out.to_host(), want.out, exact), std::nullopt);
  ASSERT_TRUE(want.grads[0] && want.grads[2]);
  EXPECT_EQ(compare(g[0].to_host(), *want.grads[0], exact), std::nullopt);
  EXPECT_EQ(compare(g[1].to_host(), *want.grads[2], exact), std::nullopt);
}

}  // namespace
}  // namespace loom::conformance
