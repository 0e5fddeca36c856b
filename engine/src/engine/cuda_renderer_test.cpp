// The CUDA target's launch shapes, and NVRTC on its kernels (skipped where
// NVRTC is absent). What the kernels compute is checked by running the
// engine's tests on LOOM_DEVICE=CUDA_EMULATOR (ctest's engine.CudaEmulator).
#include <gtest/gtest.h>

#include <cmath>

#include "engine/realize.h"
#include "loom/tensor.h"
#include "runtime/cuda/nvrtc.h"
#include "renderer/cuda_renderer.h"

namespace loom {
namespace {

engine::RenderedKernel only_kernel(const Tensor &t) {
  const std::vector<engine::RenderedKernel> ks = engine::render({t.uop()});
  EXPECT_EQ(ks.size(), 1u);
  return ks.at(0);
}

TEST(CudaRenderer, EveryOutputLoopOfAPermutedCopyIsTheThreadIndex) {
  Tensor x = Tensor::randn({64, 1000}).realize();
  const engine::RenderedKernel k = only_kernel(x.permute({1, 0}).contiguous());
  EXPECT_NE(k.cuda_source.find("if (gid >= 64000) return;"), std::string::npos) << k.cuda_source;
  EXPECT_EQ(k.cuda_source.find("for ("), std::string::npos) << k.cuda_source;
  EXPECT_EQ(k.cuda_threads, 256);
  EXPECT_EQ(k.cuda_blocks, 250);
}

TEST(CudaRenderer, AReductionWithFewOutputsRunsOneBlockPerOutput) {
  Tensor x = Tensor::randn({4, 4096}).realize();
  const engine::RenderedKernel k = only_kernel(x.sum({1}));
  EXPECT_EQ(k.cuda_blocks, 4);
  EXPECT_EQ(k.cuda_threads, 256);
  EXPECT_NE(k.cuda_source.find("+= blockDim.x)"), std::string::npos) << k.cuda_source;
  EXPECT_NE(k.cuda_source.find("= loom_group_fold("), std::string::npos) << k.cuda_source;
  EXPECT_NE(k.cuda_source.find("if (threadIdx.x == 0) {"), std::string::npos) << k.cuda_source;
}

TEST(CudaRenderer, ManyOutputsReduceInAThreadEach) {
  Tensor x = Tensor::randn({8192, 64}).realize();
  const engine::RenderedKernel k = only_kernel(x.sum({1}));
  EXPECT_EQ(k.cuda_blocks, 32);
  EXPECT_EQ(k.cuda_source.find("loom_group_fold("), std::string::npos) << k.cuda_source;
  EXPECT_NE(k.cuda_source.find("r1++)"), std::string::npos) << k.cuda_source;
}

TEST(CudaRenderer, HalvesAreSixteenBitsInMemoryAndFloatInRegisters) {
  Tensor x = Tensor::randn({300}).cast(DType::Float16).realize();
  const engine::RenderedKernel k = only_kernel(x * x);
  EXPECT_NE(k.cuda_source.find("uint16_t *__restrict__ data0"), std::string::npos) << k.cuda_source;
  EXPECT_NE(k.cuda_source.find("float val"), std::string::npos) << k.cuda_source;
  EXPECT_NE(k.cuda_source.find("loom_f2h("), std::string::npos) << k.cuda_source;
}

TEST(CudaRenderer, HalfMatmulsRunOnTensorCoresAndFloatOnesDoNot) {
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    Tensor a = Tensor::randn({37, 70}).cast(dt).realize(), b = Tensor::randn({70, 45}).cast(dt).realize();
    const engine::RenderedKernel k = only_kernel(a.matmul(b));
    EXPECT_NE(k.cuda_source.find(dt == DType::Float16 ? "loom_mma_f16(" : "loom_mma_bf16("), std::string::npos)
        << k.cuda_source;
    EXPECT_EQ(k.cuda_blocks, 2);  // 64 x 32 tiles of the 37 x 45 result
    EXPECT_EQ(k.cuda_threads, 128);
  }
  Tensor a = Tensor::randn({37, 70}).realize(), b = Tensor::randn({70, 45}).realize();
  EXPECT_EQ(only_kernel(a.matmul(b)).cuda_source.find("loom_mma"), std::string::npos);
}

// On every device (under LOOM_DEVICE=CUDA_EMULATOR, the tensor-core kernel):
// a half matmul is the exact products of its operands' values summed, to
// the output dtype's rounding.
TEST(HalfMatmul, IsTheSumOfTheOperandsProductsToTheDtypesRounding) {
  struct Case {
    Shape a, b;
    bool transpose_b;
  };
  for (DType dt : {DType::Float16, DType::BFloat16})
    for (const Case &c : {Case{{37, 70}, {70, 45}, false}, Case{{3, 20, 33}, {3, 17, 33}, true}}) {
      Tensor a = Tensor::randn(c.a).cast(dt).realize(), b = Tensor::randn(c.b).cast(dt).realize();
      if (c.transpose_b) b = b.transpose(-1, -2);
      const Tensor out = a.matmul(b);
      const HostTensor ha = a.contiguous().to_host(), hb = b.contiguous().to_host(), ho = out.to_host();
      const Shape s = out.shape();
      const int64_t batch = s.size() == 3 ? s[0] : 1, m = s[s.size() - 2], n = s.back(), k = c.a.back();
      const double tol = dt == DType::Float16 ? 2e-3 : 1e-2;
      for (int64_t z = 0; z < batch; z++)
        for (int64_t i = 0; i < m; i++)
          for (int64_t j = 0; j < n; j++) {
            double ref = 0;
            for (int64_t q = 0; q < k; q++) ref += ha.get((z * m + i) * k + q) * hb.get((z * k + q) * n + j);
            const double got = ho.get((z * m + i) * n + j);
            ASSERT_NEAR(got, ref, tol * (std::abs(ref) + 1)) << dtype_name(dt) << " at " << z << ", " << i << ", " << j;
          }
    }
}

TEST(CudaRenderer, NvrtcCompilesItsKernelsAndRejectsABrokenOne) {
  if (!runtime::cuda::nvrtc_missing().empty()) GTEST_SKIP() << runtime::cuda::nvrtc_missing();
  Tensor x = Tensor::randn({4, 4096}).realize();
  const std::string unit = renderer::cuda_prelude() + only_kernel(x.sum({1})).cuda_source;
  for (const char *arch : {"sm_80", "sm_90"}) {
    const runtime::cuda::NvrtcResult r = runtime::cuda::nvrtc_compile(unit, "sum.cu", arch);
    EXPECT_TRUE(r.ok) << r.log;
    EXPECT_FALSE(r.cubin.empty());
  }
  const runtime::cuda::NvrtcResult bad = runtime::cuda::nvrtc_compile(unit + "int broken(", "broken.cu", "sm_80");
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.log.find("error"), std::string::npos) << bad.log;
}

}  // namespace
}  // namespace loom
