// The CUDA target's launch shapes, and NVRTC on its kernels (skipped where
// NVRTC is absent). What the kernels compute is checked by running the
// engine's tests on LOOM_DEVICE=CUDA_EMULATOR (ctest's engine.CudaEmulator).
#include <gtest/gtest.h>

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
