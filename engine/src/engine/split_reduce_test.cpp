// Split reductions (schedule/split_reduce.h): which kernels split, that the
// partials' kernel runs on both cores, and the values against plain loops.
// conformance.SplitReduce checks the reductions' properties against libtorch
// with every reduction split.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine/realize.h"
#include "engine/testing/values.h"
#include "loom/tensor.h"
#include "schedule/split_reduce.h"

namespace loom {
namespace {

using testing::float_values;

std::vector<std::string> names(const Tensor &t) {
  std::vector<std::string> n;
  for (auto &item : schedule::create_schedule({t.uop()}).items) n.push_back(item.name);
  return n;
}

TEST(SplitReduce, AFullReductionOfALongInputFoldsChunksOnBothCores) {
  if (testing::no_opt()) GTEST_SKIP() << "LOOM_NOOPT=1: reductions are not split";
  Tensor x = Tensor::randn({1024, 1024}).realize();
  // The CPU: 32 chunks of 32768 elements, each folded into 64 interleaved
  // partials. A GPU: 256 chunks of 4096 consecutive elements. The fold of the
  // partials keeps the kernel's name.
  const bool cpu = schedule::split_policy().lanes;
  const std::string partials = cpu ? "r_1_32_64" : "r_1_256_1";
  EXPECT_EQ(names(x.sum()), std::vector<std::string>({partials, "r_1_1"}));
  const std::vector<engine::ExecItem> items = engine::exec_items(schedule::create_schedule({x.amax().uop()}));
  ASSERT_EQ(items.size(), 2u);
  EXPECT_TRUE(items[0].parallel);
  EXPECT_GE(items[0].global_size, 2);
  // An epilogue stays fused into the partials' fold; a few outputs split too.
  EXPECT_EQ(names(x.mean()), std::vector<std::string>({partials, "r_0d"}));
  EXPECT_EQ(names(x.reshape({4, 262144}).sum({1})), std::vector<std::string>({cpu ? "r_4_8_64" : "r_4_64_1", "r_4_1"}));
}

TEST(SplitReduce, ShortOrManyOutputReductionsStayOneKernel) {
  Tensor x = Tensor::randn({512, 512}).realize();
  EXPECT_EQ(names(x.sum({1})), std::vector<std::string>({"r_512_1"}));
  EXPECT_EQ(names(x.reshape({-1}).slice(0, 0, 16384).sum()), std::vector<std::string>({"r_1"}));
}

TEST(SplitReduce, ValuesAreThePlainLoopsFolds) {
  Tensor x = Tensor::randn({3, 65536}).realize();
  const std::vector<float> v = float_values(x);
  const std::vector<float> sum = float_values(x.sum({1})), mx = float_values(x.amax({1})), mn = float_values(x.amin({1}));
  for (size_t row = 0; row < 3; row++) {
    double s = 0;
    float hi = -INFINITY, lo = INFINITY;
    for (size_t i = row * 65536; i < (row + 1) * 65536; i++) {
      s += v[i];
      hi = std::max(hi, v[i]);
      lo = std::min(lo, v[i]);
    }
    EXPECT_NEAR(sum[row], s, 1e-5 * 65536);
    EXPECT_EQ(mx[row], hi);
    EXPECT_EQ(mn[row], lo);
  }
  // Integers fold exactly; a NaN anywhere is the max.
  const int64_t n = int64_t{1} << 20;
  Tensor ints = Tensor::arange(n);
  EXPECT_EQ(ints.sum().to_host().get(0), static_cast<double>(n * (n - 1) / 2));
  Tensor with_nan = Tensor::zeros({n}).masked_fill(ints.eq(Tensor::full({}, 777777)), NAN);
  EXPECT_TRUE(std::isnan(float_values(with_nan.amax())[0]));
}

TEST(SplitReduce, WorkIsTheGraphsPlusThePartials) {
  Tensor x = Tensor::randn({1 << 20}).realize();
  reset_run_stats();
  x.sum().realize();
  const RunStats st = run_stats();
  EXPECT_GT(st.work, st.work_needed);                // the partials are folded once more
  // The CPU: 32 x 64 partials, each added in two loops. A GPU: 256, each
  // also the fold of its block's 256 threads' sums.
  EXPECT_LE(st.work - st.work_needed, schedule::split_policy().lanes ? 2 * 32 * 64 : 2 * 256 + 256 * 256);
}

}  // namespace
}  // namespace loom
