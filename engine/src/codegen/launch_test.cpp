// The CUDA target's launch plans (codegen/launch.h), read from the kernels a
// realize would run (loom::kernels_of): a block per output where outputs are
// few or each output's terms are consecutive in memory, else a thread each.
#include <gtest/gtest.h>

#include "loom/inspect.h"
#include "loom/tensor.h"

namespace loom {
namespace {

KernelInfo only_kernel(const Tensor &t) {
  const std::vector<KernelInfo> ks = kernels_of({t});
  EXPECT_EQ(ks.size(), 1u);
  return ks.at(0);
}

TEST(CudaLaunch, ARowSumOfManyRowsRunsABlockPerRow) {
  const Tensor x = Tensor::randn({8192, 512}).realize();
  const KernelInfo rows = only_kernel(x.sum({1}));
  EXPECT_EQ(rows.cuda_blocks, 8192);
  EXPECT_EQ(rows.cuda_threads, 256);
  EXPECT_NE(rows.cuda_source.find("loom_group_fold"), std::string::npos);
}

TEST(CudaLaunch, AColumnSumOfManyColumnsRunsAThreadPerColumn) {
  const Tensor x = Tensor::randn({512, 8192}).realize();
  const KernelInfo cols = only_kernel(x.sum({0}));  // threads side by side read consecutive elements
  EXPECT_EQ(cols.cuda_blocks, 8192 / 256);
  EXPECT_EQ(cols.cuda_threads, 256);
  EXPECT_EQ(cols.cuda_source.find("loom_group_fold"), std::string::npos);
}

}  // namespace
}  // namespace loom
