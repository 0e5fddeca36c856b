// The CUDA target's launch plans (codegen/launch.h), read from the kernels a
// realize would run (loom::kernels_of): a block per output where outputs are
// few or each output's terms are consecutive in memory, else a thread each.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

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

size_t loops_in(const std::string &source) {
  size_t n = 0;
  for (size_t at = source.find("for ("); at != std::string::npos; at = source.find("for (", at + 1)) n++;
  return n;
}

// A grouped sum adds in one level, its threads striding every term (two
// levels, 64 partials of 64 terms, kept 192 of 256 threads idle); a thread
// per output keeps the two levels.
TEST(CudaLaunch, AGroupedSumStridesAllItsTermsOverTheBlock) {
  const Tensor x = Tensor::randn({64, 4096}).realize();
  const KernelInfo rows = only_kernel(x.sum({1}));
  EXPECT_EQ(rows.cuda_blocks, 64);
  EXPECT_EQ(loops_in(rows.cuda_source), 1u) << rows.cuda_source;
  EXPECT_TRUE(std::regex_search(rows.cuda_source, std::regex(R"(for \(int64_t (r\d+) = threadIdx\.x; \1 < 4096; \1 \+= blockDim\.x\))")))
      << rows.cuda_source;
  const KernelInfo cols = only_kernel(Tensor::randn({4096, 8192}).realize().sum({0}));
  EXPECT_EQ(cols.cuda_blocks, 8192 / 256);
  EXPECT_EQ(loops_in(cols.cuda_source), 2u) << cols.cuda_source;
}

// A per-channel sum over (N, H, W) splits into partials over a few images
// each, a block per partial; the images' loop and the pixels' loop nested
// alone in it run as one loop over the block, consecutive threads reading
// consecutive pixels (strided over the images alone, 32 threads of 256
// were busy, each reading its own image).
TEST(CudaLaunch, ANestOfReducedLoopsRunsAsOneLoopOverTheBlock) {
  const Tensor x = Tensor::randn({64, 16, 32, 32}).realize();
  const std::vector<KernelInfo> ks = kernels_of({x.sum({0, 2, 3})});
  ASSERT_FALSE(ks.empty());
  const std::string &src = ks[0].cuda_source;
  EXPECT_NE(src.find("loom_group_fold"), std::string::npos) << src;
  EXPECT_EQ(loops_in(src), 1u) << src;
  EXPECT_TRUE(std::regex_search(src, std::regex(R"(for \(int64_t (r\d+_flat) = threadIdx\.x; \1 < \d+; \1 \+= blockDim\.x\))"))) << src;
  const HostTensor got = x.sum({0, 2, 3}).to_host(), in = x.to_host();
  for (int64_t c = 0; c < 16; c++) {
    double want = 0;
    for (int64_t n = 0; n < 64; n++)
      for (int64_t p = 0; p < 1024; p++) want += in.get((n * 16 + c) * 1024 + p);
    EXPECT_NEAR(got.get(c), want, 1e-2) << c;
  }
}

// A scan along lines of 1024 or more runs a block per line (each thread a
// run of it, its start the block's exclusive scan of the runs' totals); a
// short one a thread per line. On every device: the values are the serial
// scan's, within float64's rounding (integers exactly).
TEST(CudaLaunch, ALongScanRunsABlockPerLine) {
  const int64_t lines = 3, n = 3001;  // runs of 12, the last thread's cut short
  std::vector<double> v;
  for (int64_t i = 0; i < lines * n; i++) v.push_back(static_cast<double>((i * 7919) % 23) - 11);
  const Tensor rows = Tensor::from_vector(v, {lines, n}), cols = Tensor::from_vector(v, {n, lines});
  const KernelInfo along = kernels_of({rows.cumsum(1)}).at(0);
  EXPECT_EQ(along.cuda_blocks, lines);
  EXPECT_NE(along.cuda_source.find("loom_group_scan"), std::string::npos) << along.cuda_source;
  EXPECT_EQ(kernels_of({cols.cumsum(1)}).at(0).cuda_source.find("loom_group_scan"), std::string::npos);  // lines of 3
  for (DType dt : {DType::Float32, DType::Int64})
    for (int64_t dim : {0, 1}) {
      const Tensor x = (dim == 1 ? rows : cols).cast(dt);
      const HostTensor sum = x.cumsum(dim).to_host(), prod = (x * 0.0 + 1.0).cumprod(dim).to_host();
      for (int64_t l = 0; l < lines; l++) {
        double want = 0;
        for (int64_t k = 0; k < n; k++) {
          const int64_t at = dim == 1 ? l * n + k : k * lines + l;
          want += v[static_cast<size_t>(at)];
          ASSERT_NEAR(sum.get(at), want, dt == DType::Int64 ? 0.0 : 1e-3) << "dim " << dim << " line " << l;
          ASSERT_EQ(prod.get(at), 1.0);
        }
      }
    }
}

}  // namespace
}  // namespace loom
