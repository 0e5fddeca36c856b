// Float32 sums along memory split into interleaved partials (codegen/
// optimize.h's sum_lanes, lowerer.h): lane j adds the terms whose index along
// the input's last axis is j modulo the lane count, in loop order, and the
// partials then add in lane order. The values are those of that loop on
// every vector width (and of one running sum under LOOM_NOOPT=1).
#include <gtest/gtest.h>

#include <cstring>

#include "codegen/pipeline.h"
#include "codegen/vectorize.h"
#include "engine/testing/program.h"
#include "engine/testing/values.h"
#include "loom/tensor.h"

namespace loom {
namespace {

using uop::Op;
using testing::program_of;

// Accumulators the program declares, counting a vector of n lanes as n.
int64_t accumulators(const codegen::KernelSpec &p) {
  int64_t n = 0;
  for (auto &u : p.uops)
    if (u->op == Op::DefineAcc) n += codegen::lanes(*u);
  return n;
}

// Each row of a (rows, n) row-major matrix summed in `lanes` interleaved
// partials, each from 0 in order, then partial 0 + partial 1 + ...
std::vector<float> row_sums(const std::vector<float> &x, int64_t rows, int64_t n, int64_t lanes) {
  std::vector<float> out;
  for (int64_t r = 0; r < rows; r++) {
    std::vector<float> partial(static_cast<size_t>(lanes), 0.0f);
    for (int64_t i = 0; i < n; i++) partial[static_cast<size_t>(i % lanes)] += x[static_cast<size_t>(r * n + i)];
    float total = partial[0];
    for (int64_t j = 1; j < lanes; j++) total += partial[static_cast<size_t>(j)];
    out.push_back(total);
  }
  return out;
}

bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(SumLanes, ARowSumAddsInterleavedPartialsInLaneOrderBitForBit) {
  if (!testing::on_cpu()) GTEST_SKIP() << "a GPU's long sums split across threads (codegen/launch.h)";
  Tensor::manual_seed(40);
  const int64_t rows = 16, n = 8 * 40;
  const Tensor x = Tensor::randn({rows, n}).realize();
  const std::vector<float> got = testing::float_values(x.sum({1})), xv = testing::float_values(x);
  const int64_t lanes = testing::sum_lanes();
  EXPECT_TRUE(same_bits(got, row_sums(xv, rows, n, lanes))) << lanes << " lanes";
  // The check tells the orders apart: some row's bits differ between them.
  EXPECT_FALSE(same_bits(row_sums(xv, rows, n, 8), row_sums(xv, rows, n, 1)));
}

// 8 lanes do not divide 323: lanes 0-2 take one term more, after the others.
TEST(SumLanes, ARowOfNoMultipleOfTheLanesAddsEachLanesLastTermAfterItsGroups) {
  if (!testing::on_cpu()) GTEST_SKIP() << "a GPU's long sums split across threads (codegen/launch.h)";
  Tensor::manual_seed(42);
  const int64_t rows = 16, n = 8 * 40 + 3;
  const Tensor x = Tensor::randn({rows, n}).realize();
  const std::vector<float> got = testing::float_values(x.sum({1})), xv = testing::float_values(x);
  EXPECT_TRUE(same_bits(got, row_sums(xv, rows, n, testing::sum_lanes())));
  EXPECT_FALSE(same_bits(row_sums(xv, rows, n, 8), row_sums(xv, rows, n, 1)));
}

TEST(SumLanes, TheCTargetsPartialsAreOneVectorAccumulatorPerRowOfTheTile) {
  if (testing::no_opt()) GTEST_SKIP() << "LOOM_NOOPT=1 turns the optimize pass off";
  const Tensor x = Tensor::randn({16, 320}).realize();
  const codegen::Target c;
  ASSERT_EQ(c.sum_lanes, 8);
  const codegen::KernelSpec p = program_of(x.sum({1}), c);
  EXPECT_EQ(accumulators(p), 8 * 8) << "8 rows of 8 lanes";
  bool vector_acc = false;
  for (auto &u : p.uops) vector_acc = vector_acc || (u->op == Op::DefineAcc && codegen::lanes(*u) > 1);
  EXPECT_TRUE(vector_acc);
  codegen::Target one = c;
  one.sum_lanes = 1;
  EXPECT_EQ(accumulators(program_of(x.sum({1}), one)), 8) << "8 rows, one running sum each";
}

// Only where the terms are consecutive in memory, and not in a matmul, whose
// tile already runs its columns as vector lanes; nor sums under 64 terms.
TEST(SumLanes, StridedShortAndMatmulSumsKeepOneRunningSum) {
  if (testing::no_opt()) GTEST_SKIP() << "LOOM_NOOPT=1 turns the optimize pass off";
  const codegen::Target c;
  const Tensor t = Tensor::randn({320, 16}).realize().permute({1, 0});  // (16, 320), the 320 strided
  EXPECT_EQ(accumulators(program_of(t.sum({1}), c)), 8);
  EXPECT_EQ(accumulators(program_of(Tensor::randn({16, 56}).realize().sum({1}), c)), 8);
  const Tensor a = Tensor::randn({8, 64}).realize(), b = Tensor::randn({64, 32}).realize();
  EXPECT_EQ(accumulators(program_of(a.matmul(b), c)), 64) << "the 8 x 8 tile";
  if (!testing::on_cpu()) return;  // the values: a GPU's long sums split across threads (codegen/launch.h)
  const std::vector<float> got = testing::float_values(t.sum({1}));
  EXPECT_TRUE(same_bits(got, row_sums(testing::float_values(t.contiguous()), 16, 320, 1)));
}

// A per-channel sum over (N, C, 15, 15) (BatchNorm's statistics on hlb's
// images): the image's 225 elements merge into one axis, lane j takes its
// elements j mod 8, for each image its 28 whole groups then (lane 0) the
// 225th element, and adds each image's partial into its total.
TEST(SumLanes, APerChannelSumOverAnOddImageAddsEachImagesPartial) {
  if (!testing::on_cpu()) GTEST_SKIP() << "a GPU's long sums split across threads (codegen/launch.h)";
  Tensor::manual_seed(43);
  const int64_t N = 4, C = 3, HW = 225;
  const Tensor x = Tensor::randn({N, C, 15, 15}).realize();
  // keepdim, as BatchNorm reduces: the output's rank is the input's, so the image axes merge.
  const std::vector<float> got = testing::float_values(x.sum({0, 2, 3}, true)), xv = testing::float_values(x);
  const int64_t lanes = testing::sum_lanes();
  for (int64_t c = 0; c < C; c++) {
    float want = 0.0f;
    if (lanes == 1) {
      for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < HW; i++) want += xv[static_cast<size_t>((n * C + c) * HW + i)];
    } else {
      std::vector<float> total(static_cast<size_t>(lanes), 0.0f);
      for (int64_t n = 0; n < N; n++)
        for (int64_t j = 0; j < lanes; j++) {
          float image = 0.0f;
          for (int64_t i = j; i < HW; i += lanes) image += xv[static_cast<size_t>((n * C + c) * HW + i)];
          total[static_cast<size_t>(j)] += image;
        }
      want = total[0];
      for (int64_t j = 1; j < lanes; j++) want += total[static_cast<size_t>(j)];
    }
    EXPECT_EQ(std::memcmp(&got[static_cast<size_t>(c)], &want, sizeof(float)), 0) << "channel " << c;
  }
}

// A per-channel sum over (N, C, H, W) (BatchNorm's statistics) splits along
// W: lane j takes w = j mod 8 of every (n, h), n outermost.
TEST(SumLanes, APerChannelSumSplitsAlongTheImageRow) {
  if (!testing::on_cpu()) GTEST_SKIP() << "a GPU's long sums split across threads (codegen/launch.h)";
  Tensor::manual_seed(41);
  const int64_t N = 4, C = 3, H = 8, W = 16;
  const Tensor x = Tensor::randn({N, C, H, W}).realize();
  const std::vector<float> got = testing::float_values(x.sum({0, 2, 3})), xv = testing::float_values(x);
  const int64_t lanes = testing::sum_lanes();
  for (int64_t c = 0; c < C; c++) {
    std::vector<float> partial(static_cast<size_t>(lanes), 0.0f);
    for (int64_t n = 0; n < N; n++)
      for (int64_t h = 0; h < H; h++)
        for (int64_t w = 0; w < W; w++)
          partial[static_cast<size_t>(w % lanes)] += xv[static_cast<size_t>(((n * C + c) * H + h) * W + w)];
    float want = partial[0];
    for (int64_t j = 1; j < lanes; j++) want += partial[static_cast<size_t>(j)];
    EXPECT_EQ(std::memcmp(&got[static_cast<size_t>(c)], &want, sizeof(float)), 0) << "channel " << c;
  }
}

}  // namespace
}  // namespace loom
