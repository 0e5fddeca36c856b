// A short arange is computed in the kernels that read it: nothing is
// uploaded, and its values are bit for bit those a longer arange (built on
// the host and uploaded) gives at the same positions.
#include <gtest/gtest.h>

#include <vector>

#include "loom/tensor.h"

namespace loom {
namespace {

// The values' bytes (a float's sign of zero included).
std::vector<uint8_t> bytes_of(const Tensor &t) {
  const HostTensor h = t.to_host().to_contiguous();
  const size_t n = static_cast<size_t>(h.numel()) * itemsize(h.dtype);
  const uint8_t *p = h.storage->data() + static_cast<size_t>(h.offset) * itemsize(h.dtype);
  return std::vector<uint8_t>(p, p + n);
}

TEST(Arange, AShortOneUploadsNothing) {
  Tensor warm = Tensor::arange(4, 0, -1).reshape({1, 4}).expand({3, 4}).sum({0});
  warm.realize();  // compiles what it needs
  reset_run_stats();
  Tensor scores = Tensor::arange(4, 0, -1).reshape({1, 4}).expand({3, 4}).sum({0});
  const HostTensor h = scores.to_host();
  EXPECT_EQ(h.get_int(0), 12);
  EXPECT_EQ(h.get_int(3), 3);
  EXPECT_EQ(run_stats().host_writes, 0);
  reset_run_stats();
  Tensor::arange(17).realize();  // longer: built on the host
  EXPECT_EQ(run_stats().host_writes, 1);
}

TEST(Arange, AShortOneHasTheUploadedValuesBitForBit) {
  struct Case {
    double start, step;
    DType dtype;
  };
  // Steps that are not exact in binary, a negative step from zero (0 + -0.0
  // is +0.0), a start past 2^24 in float32, and a truncated int64.
  const std::vector<Case> cases{{0.3, 0.1, DType::Float32}, {0.3, 0.1, DType::Float64},
                                {0.0, -1.0, DType::Float32}, {0.0, -0.7, DType::Float64},
                                {16777217.0, 3.0, DType::Float32}, {-2.5, 0.75, DType::Int64}};
  for (const Case &c : cases) {
    // 16 values are computed in kernels, 17 are uploaded: the first 16 must agree.
    const double end16 = c.start + 15.5 * c.step, end17 = c.start + 16.5 * c.step;
    Tensor short_one = Tensor::arange(Scalar(c.start), Scalar(end16), Scalar(c.step), c.dtype);
    Tensor long_one = Tensor::arange(Scalar(c.start), Scalar(end17), Scalar(c.step), c.dtype);
    ASSERT_EQ(short_one.shape(), Shape{16});
    ASSERT_EQ(long_one.shape(), Shape{17});
    EXPECT_EQ(bytes_of(short_one), bytes_of(long_one.shrink({{0, 16}})))
        << "start " << c.start << " step " << c.step << " " << dtype_name(c.dtype);
  }
}

}  // namespace
}  // namespace loom
