// The CUDA target's launch shapes, and NVRTC on its kernels (skipped where
// NVRTC is absent). What the kernels compute is checked by running the
// engine's tests on LOOM_DEVICE=CUDA_EMULATOR (ctest's engine.CudaEmulator).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "engine/realize.h"
#include "engine/testing/extern_gemm.h"
#include "engine/testing/gemm_settings.h"
#include "knobs/knobs.h"
#include "loom/autograd.h"
#include "loom/nn.h"
#include "loom/tensor.h"
#include "codegen/pipeline.h"
#include "schedule/gemm.h"
#include "schedule/schedule.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/device.h"
#include "renderer/cuda_renderer.h"

namespace loom {
namespace {

engine::RenderedKernel only_kernel(const Tensor &t) {
  const std::vector<engine::RenderedKernel> ks = engine::render({t.uop()});
  EXPECT_EQ(ks.size(), 1u);
  return ks.at(0);
}

// A thread computes 4 consecutive outputs: the permuted input's 4 loads are
// strided (scalars), the output's store one float4.
TEST(CudaRenderer, EveryOutputLoopOfAPermutedCopyIsTheThreadIndex) {
  Tensor x = Tensor::randn({64, 1000}).realize();
  const engine::RenderedKernel k = only_kernel(x.permute({1, 0}).contiguous());
  EXPECT_NE(k.cuda_source.find("if (gid >= 16000) return;"), std::string::npos) << k.cuda_source;
  EXPECT_EQ(k.cuda_source.find("for ("), std::string::npos) << k.cuda_source;
  EXPECT_EQ(k.cuda_source.find("loom_ld4("), std::string::npos) << k.cuda_source;
  EXPECT_NE(k.cuda_source.find("= make_float4("), std::string::npos) << k.cuda_source;
  EXPECT_NE(k.cuda_source.find("loom_st4(&data0["), std::string::npos) << k.cuda_source;
  EXPECT_EQ(k.cuda_threads, 256);
  EXPECT_EQ(k.cuda_blocks, 63);
}

size_t count(const std::string &s, const std::string &what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) n++;
  return n;
}

// Vector accesses only where the first element's index is a multiple of 4
// (every buffer starts aligned): a view at offset 1 or 2 loads scalars, one
// at offset 4 a float4; the output stores float4s. An axis 4 does not divide
// runs one element per thread. Halves: 8 per thread, in two 8-byte accesses.
TEST(CudaRenderer, LoadsAndStoresAreVectorsWhereAligned) {
  Tensor x = Tensor::randn({4100}).realize();
  for (int64_t offset : {0, 1, 2, 4}) {
    const engine::RenderedKernel k = only_kernel(x.slice(0, offset, offset + 4096) * 2.0);
    EXPECT_EQ(count(k.cuda_source, "loom_ld4("), offset % 4 == 0 ? 1u : 0u) << offset << "\n" << k.cuda_source;
    EXPECT_EQ(count(k.cuda_source, "loom_st4("), 1u) << k.cuda_source;
    EXPECT_EQ(k.cuda_blocks, 4);  // 1024 threads of 4 outputs
  }
  const engine::RenderedKernel odd = only_kernel(x.slice(0, 0, 4097) * 2.0);
  EXPECT_EQ(odd.cuda_source.find("loom_st4("), std::string::npos) << odd.cuda_source;
  EXPECT_NE(odd.cuda_source.find("if (gid >= 4097) return;"), std::string::npos) << odd.cuda_source;
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    Tensor h = Tensor::randn({4096}).cast(dt).realize();
    const engine::RenderedKernel half = only_kernel(h * h);
    const std::string s = dt == DType::Float16 ? "4h(" : "4bf(";
    EXPECT_EQ(count(half.cuda_source, "loom_ld" + s), 2u) << half.cuda_source;
    EXPECT_EQ(count(half.cuda_source, "loom_st" + s), 2u) << half.cuda_source;
    EXPECT_EQ(half.cuda_blocks, 2);
  }
}

// On every device (under LOOM_DEVICE=CUDA_EMULATOR a misaligned vector
// access traps): views at every offset mod 4, broadcasts and a padded view
// compute their elements, in float32 and both halves (the values are exact
// in each).
TEST(VectorAccess, ViewsAtEveryOffsetComputeTheirElements) {
  std::vector<double> v(4200);
  for (size_t i = 0; i < v.size(); i++) v[i] = static_cast<double>(i % 97) - 40.0;
  for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor x = Tensor::from_vector(v, {4200}, dt).realize();
    for (int64_t offset = 0; offset < 8; offset++) {
      const HostTensor got = (x.slice(0, offset, offset + 4096) * 2.0 + x.slice(0, 4, 4100)).to_host();
      for (int64_t i = 0; i < 4096; i++)
        ASSERT_EQ(got.get(i), 2 * v[static_cast<size_t>(offset + i)] + v[static_cast<size_t>(4 + i)])
            << offset << ", " << i;
    }
    const HostTensor rows = (x.slice(0, 0, 64).reshape({64, 1}) + x.slice(0, 1, 33).reshape({1, 32})).to_host();
    for (int64_t i = 0; i < 64; i++)
      for (int64_t j = 0; j < 32; j++)
        ASSERT_EQ(rows.get(i * 32 + j), v[static_cast<size_t>(i)] + v[static_cast<size_t>(1 + j)]) << i << ", " << j;
    const HostTensor padded = x.slice(0, 0, 4094).pad({{1, 1}}, 7.0).to_host();
    for (int64_t i = 0; i < 4096; i++)
      ASSERT_EQ(padded.get(i), i == 0 || i == 4095 ? 7.0 : v[static_cast<size_t>(i - 1)]) << i;
  }
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
    EXPECT_EQ(k.cuda_blocks, 1);  // one 128 x 128 tile holds the 37 x 45 result
    EXPECT_EQ(k.cuda_threads, 256);
    EXPECT_NE(k.cuda_source.find("__shared__"), std::string::npos) << k.cuda_source;
    const Tensor wide = Tensor::randn({300, 70}).cast(dt).realize(), tall = Tensor::randn({70, 129}).cast(dt).realize();
    EXPECT_EQ(only_kernel(wide.matmul(tall)).cuda_blocks, 3 * 2);
    // Rows of 70 halves: no 16-byte groups, elements through registers.
    EXPECT_EQ(k.cuda_source.find("loom_cp_async16("), std::string::npos) << k.cuda_source;
    EXPECT_NE(k.cuda_source.find("ra[i] = "), std::string::npos) << k.cuda_source;
    // Rows of 64 (A's terms) and 200 (B's columns): both in copies, B's read transposed.
    const Tensor a64 = Tensor::randn({136, 64}).cast(dt).realize(), b64 = Tensor::randn({64, 200}).cast(dt).realize();
    const std::string aligned = only_kernel(a64.matmul(b64)).cuda_source;
    EXPECT_EQ(aligned.find("uint16_t ra["), std::string::npos) << aligned;
    EXPECT_EQ(aligned.find("uint16_t rb["), std::string::npos) << aligned;
    EXPECT_NE(aligned.find("loom_cp_async16(&sa["), std::string::npos) << aligned;
    EXPECT_NE(aligned.find("loom_cp_async16(&sb["), std::string::npos) << aligned;
    EXPECT_NE(aligned.find("loom_ldsm_x4(fa[i]"), std::string::npos) << aligned;
    EXPECT_NE(aligned.find("loom_ldsm_x4_trans(f,"), std::string::npos) << aligned;
    if (runtime::cuda::nvrtc_missing().empty())
      for (const std::string &source : {k.cuda_source, aligned})
        for (const char *arch : {"sm_80", "sm_90"}) {
          const runtime::cuda::NvrtcResult r = runtime::cuda::nvrtc_compile(renderer::cuda_prelude() + source, "gemm.cu", arch);
          EXPECT_TRUE(r.ok) << arch << ": " << r.log;
        }
  }
  Tensor a = Tensor::randn({37, 70}).realize(), b = Tensor::randn({70, 45}).realize();
  EXPECT_EQ(only_kernel(a.matmul(b)).cuda_source.find("loom_mma"), std::string::npos);
}

// On every device, generated (under LOOM_DEVICE=CUDA_EMULATOR, the
// tensor-core kernel: one tile, several with edges in m, n and k, operands
// read along their terms and along their rows or columns, element by
// element or, where 8 halves line up, in asynchronous copies, some of them
// cut short by the edge of k) and extern (cuBLAS on CUDA): a half matmul is
// the exact products of its operands' values summed, to the output dtype's
// rounding.
TEST(HalfMatmul, IsTheSumOfTheOperandsProductsToTheDtypesRounding) {
  struct Case {
    Shape a, b;  // as made: transposed after where said
    bool transpose_b, transpose_a = false;
    int64_t terms = 0;  // where set, the first `terms` of k only (a view)
  };
  for (bool ext : {false, true}) {
    testing::ExternGemm setting(ext);
    for (DType dt : {DType::Float16, DType::BFloat16})
      for (const Case &c : {Case{{37, 70}, {70, 45}, false}, Case{{3, 20, 33}, {3, 17, 33}, true},
                            Case{{130, 70}, {70, 260}, false}, Case{{2, 40, 129}, {2, 131, 40}, true, true},
                            Case{{3, 136, 64}, {3, 64, 200}, false}, Case{{2, 96, 40}, {2, 24, 96}, true, true},
                            Case{{3, 136, 64}, {3, 64, 200}, false, false, 60}}) {
        Tensor a = Tensor::randn(c.a).cast(dt).realize(), b = Tensor::randn(c.b).cast(dt).realize();
        if (c.transpose_b) b = b.transpose(-1, -2);
        if (c.transpose_a) a = a.transpose(-1, -2);
        if (c.terms) a = a.slice(-1, 0, c.terms), b = b.slice(-2, 0, c.terms);
        const Tensor out = a.matmul(b);
        const HostTensor ha = a.contiguous().to_host(), hb = b.contiguous().to_host(), ho = out.to_host();
        const Shape s = out.shape();
        const int64_t batch = s.size() == 3 ? s[0] : 1, m = s[s.size() - 2], n = s.back(), k = a.shape().back();
        const double tol = dt == DType::Float16 ? 2e-3 : 1e-2;
        for (int64_t z = 0; z < batch; z++)
          for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
              double ref = 0;
              for (int64_t q = 0; q < k; q++) ref += ha.get((z * m + i) * k + q) * hb.get((z * k + q) * n + j);
              const double got = ho.get((z * m + i) * n + j);
              ASSERT_NEAR(got, ref, tol * (std::abs(ref) + 1))
                  << dtype_name(dt) << (ext ? " extern" : " generated") << " at " << z << ", " << i << ", " << j;
            }
      }
  }
}

// A convolution of halves large enough for the GEMM split: where its
// windows pack (no template or library reads them in place), they pack into
// a half buffer and the GEMM is a half one (on tensor cores on CUDA); its
// values, every way it runs, are the float32 convolution's of the same
// halves, to the dtype's rounding.
TEST(HalfConv, SplitsIntoHalfPacksAndAHalfGemm) {
  testing::MinMacs all(0);
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    Tensor x = Tensor::randn({2, 3, 9, 9}).cast(dt).realize(), w = Tensor::randn({5, 3, 3, 3}).cast(dt).realize();
    const Tensor y = nn::conv2d(x, w, std::nullopt, {1, 1}, {1, 1});
    std::vector<engine::RenderedKernel> ks;
    {
      testing::GemmGathers packs(testing::kNoGathers);
      ks = engine::render({y.uop()});
    }
    bool mma = false, half_pack = false;
    for (const auto &k : ks) {
      mma |= k.cuda_source.find("loom_mma_") != std::string::npos;
      half_pack |= k.name.rfind("pack", 0) == 0 && k.ast.find(std::string("STORE") ) != std::string::npos &&
                   k.ast.find(std::string("DEFINE_GLOBAL ") + dtype_name(dt) + " 0") != std::string::npos;
    }
    EXPECT_TRUE(mma) << dtype_name(dt);
    EXPECT_TRUE(half_pack) << dtype_name(dt);
    const HostTensor want = nn::conv2d(x.cast(DType::Float32), w.cast(DType::Float32), std::nullopt, {1, 1}, {1, 1}).to_host();
    for (bool ext : {false, true}) {
      testing::ExternGemm setting(ext);
      const HostTensor got = nn::conv2d(x, w, std::nullopt, {1, 1}, {1, 1}).to_host();
      ASSERT_EQ(got.numel(), want.numel());
      const double tol = dt == DType::Float16 ? 2e-3 : 1e-2;
      for (int64_t i = 0; i < got.numel(); i++)
        ASSERT_NEAR(got.get(i), want.get(i), tol * (std::abs(want.get(i)) + 1)) << (ext ? "extern " : "generated ") << i;
    }
  }
}

// Beside cuDNN (the CUDA device's where libcudnn loads, the emulator's
// emulated one), a half convolution's windows are no pack: its GEMM is one
// cudnnConvolutionForward call, at stride 1 and 2, with and without padding,
// dilated, over a sliced image (stored row-major first); its weight gradient one
// cudnnConvolutionBackwardFilter call, its stride-1 input gradient one more
// forward call. The values are the float32 convolution's to the dtype's
// rounding.
TEST(HalfConv, BesideCudnnAConvolutionIsOneCudnnCall) {
  if (!runtime::default_device().extern_convs()) GTEST_SKIP() << "no extern convolutions on this device";
  // The references' operands: float32 buffers (a cast of halves read as it
  // is would be the same half convolution again).
  auto wide = [](const Tensor &t) { return t.cast(DType::Float32).realize(); };
  if (knobs::noopt()) GTEST_SKIP() << "LOOM_NOOPT=1: GEMMs are not split";
  testing::MinMacs all(0);
  testing::ExternGemm on(true);
  struct Case {
    int64_t stride, pad, dilation;
    bool sliced;  // the image a view: every other column of a wider one
  };
  for (DType dt : {DType::Float16, DType::BFloat16})
    for (const Case &c : {Case{1, 1, 1, false}, Case{2, 1, 1, false}, Case{1, 0, 1, false}, Case{1, 2, 2, false},
                          Case{1, 1, 1, true}}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " stride " + std::to_string(c.stride) + " pad " + std::to_string(c.pad) +
                   " dilation " + std::to_string(c.dilation) + (c.sliced ? " sliced" : ""));
      Tensor x = Tensor::randn({2, 3, 9, c.sliced ? 18 : 9}).cast(dt).realize();
      if (c.sliced) x = x.slice(3, 0, std::nullopt, 2);
      const Tensor w = Tensor::randn({5, 3, 3, 3}).cast(dt).realize();
      const Tensor y = nn::conv2d(x, w, std::nullopt, c.stride, c.pad, c.dilation);
      std::vector<std::string> kernels;  // no pack, no epilogue: cuDNN writes y in its dtype
      for (const engine::RenderedKernel &k : engine::render({y.uop()}))
        kernels.push_back(k.library.empty() ? k.name : k.library);
      std::vector<std::string> want_kernels = {"cudnn conv"};
      if (c.sliced) want_kernels.insert(want_kernels.begin(), "E_2_3_9_9");  // stored row-major first
      EXPECT_EQ(kernels, want_kernels);
      const HostTensor got = y.to_host();
      const HostTensor want =
          nn::conv2d(wide(x), wide(w), std::nullopt, c.stride, c.pad, c.dilation).to_host();
      ASSERT_EQ(got.numel(), want.numel());
      const double tol = dt == DType::Float16 ? 2e-3 : 1e-2;
      for (int64_t i = 0; i < got.numel(); i++) ASSERT_NEAR(got.get(i), want.get(i), tol * (std::abs(want.get(i)) + 1)) << i;
    }
  // A weight gradient whose output gradient is a broadcast (no view of a
  // buffer cuDNN can read): its operands pack, for cuBLAS.
  const Tensor x = Tensor::randn({2, 3, 9, 9}).cast(DType::Float16).realize();
  Tensor w = Tensor::randn({5, 3, 3, 3}).cast(DType::Float16).realize();
  w.requires_grad_();
  const Tensor loss = nn::conv2d(x, w, std::nullopt, 1, 1).cast(DType::Float32).sum();
  int packs = 0, cudnn = 0;
  for (const engine::RenderedKernel &k : engine::render({autograd::grad({loss}, {w})[0].uop()})) {
    packs += k.name.rfind("pack", 0) == 0;
    cudnn += k.library == "cudnn conv";
  }
  EXPECT_GE(packs, 1);
  EXPECT_EQ(cudnn, 0);
  // A weight gradient of an output gradient in memory: one
  // cudnnConvolutionBackwardFilter call over the image and the output
  // gradient as they are (no pack), writing dw in the weights' dtype; the
  // values the float32 gradient's of the same halves.
  for (DType dt : {DType::Float16, DType::BFloat16})
    for (const Case &c : {Case{1, 1, 1, false}, Case{2, 1, 1, false}, Case{1, 2, 2, false}, Case{1, 0, 1, true}}) {
      SCOPED_TRACE(std::string("weight gradient ") + dtype_name(dt) + " stride " + std::to_string(c.stride) + " pad " +
                   std::to_string(c.pad) + " dilation " + std::to_string(c.dilation) + (c.sliced ? " sliced" : ""));
      Tensor xw = Tensor::randn({2, 3, 9, c.sliced ? 18 : 9}).cast(dt).realize();
      if (c.sliced) xw = xw.slice(3, 0, std::nullopt, 2);
      Tensor ww = Tensor::randn({5, 3, 3, 3}).cast(dt).realize();
      ww.requires_grad_();
      const Tensor y = nn::conv2d(xw, ww, std::nullopt, c.stride, c.pad, c.dilation);
      const Tensor g = Tensor::randn(y.shape()).cast(dt).realize();
      const Tensor dw = autograd::grad({y}, {ww}, {g})[0];
      std::vector<std::string> kernels;
      for (const engine::RenderedKernel &k : engine::render({dw.uop()}))
        kernels.push_back(k.library.empty() ? k.name : k.library);
      std::vector<std::string> want_kernels = {"cudnn wgrad"};
      if (c.sliced) want_kernels.insert(want_kernels.begin(), "E_2_3_9_9");
      EXPECT_EQ(kernels, want_kernels);
      const HostTensor got = dw.to_host();  // first: the references' casts, realized, would be read in its place
      Tensor w32 = wide(ww.detach()).requires_grad_();
      const HostTensor want = autograd::grad({nn::conv2d(wide(xw), w32, std::nullopt, c.stride, c.pad, c.dilation)},
                                             {w32}, {wide(g)})[0]
                                  .to_host();
      ASSERT_EQ(got.numel(), want.numel());
      const double tol = dt == DType::Float16 ? 2e-3 : 1e-2;
      for (int64_t i = 0; i < got.numel(); i++) ASSERT_NEAR(got.get(i), want.get(i), tol * (std::abs(want.get(i)) + 1)) << i;
    }
  // A stride-1 input gradient is a convolution of the output gradient's
  // windows with the flipped weights (their pack): one cuDNN call writing
  // dx in the input's dtype; no windows' gradient added back.
  // Its values the float32 gradient's of the same halves.
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    SCOPED_TRACE(std::string("input gradient ") + dtype_name(dt));
    Tensor xi = Tensor::randn({2, 3, 9, 9}).cast(dt).realize(), wi = Tensor::randn({5, 3, 3, 3}).cast(dt).realize();
    const Tensor g = Tensor::randn({2, 5, 9, 9}).cast(dt).realize();
    xi.requires_grad_();
    const Tensor dx = autograd::grad({nn::conv2d(xi, wi, std::nullopt, 1, 1)}, {xi}, {g})[0];
    std::vector<std::string> kernels;
    for (const engine::RenderedKernel &k : engine::render({dx.uop()}))
      kernels.push_back(k.library.empty() ? k.name : k.library);
    EXPECT_EQ(kernels, (std::vector<std::string>{"pack_1_3_45", "cudnn conv"}));
    const HostTensor got = dx.to_host();
    Tensor x32 = wide(xi.detach()).requires_grad_();
    const HostTensor want =
        autograd::grad({nn::conv2d(x32, wide(wi), std::nullopt, 1, 1)}, {x32}, {wide(g)})[0].to_host();
    ASSERT_EQ(got.numel(), want.numel());
    const double tol = dt == DType::Float16 ? 2e-3 : 1e-2;
    for (int64_t i = 0; i < got.numel(); i++) ASSERT_NEAR(got.get(i), want.get(i), tol * (std::abs(want.get(i)) + 1)) << i;
  }
}

// Without an extern GEMM, the tensor-core GEMM reads a half convolution's
// windows through their views: no pack, the same bits as the packed
// windows' GEMM (the same halves summed in the same order), at stride 1 and
// 2, with and without padding; the window's coordinates unmerged; NVRTC
// compiles it.
TEST(HalfConv, TheTensorCoreGemmGathersTheWindowsWithoutAPack) {
  if (!runtime::default_device().target().tensor_cores) GTEST_SKIP() << "no tensor-core GEMM on this device";
  if (knobs::noopt()) GTEST_SKIP() << "LOOM_NOOPT=1: GEMMs are not split";
  testing::MinMacs all(0);
  testing::ExternGemm off(false);
  for (DType dt : {DType::Float16, DType::BFloat16})
    for (auto [stride, pad] : {std::pair<int64_t, int64_t>{1, 1}, {2, 1}, {1, 0}}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " stride " + std::to_string(stride) + " pad " + std::to_string(pad));
      Tensor x = Tensor::randn({2, 3, 9, 9}).cast(dt).realize(), w = Tensor::randn({5, 3, 3, 3}).cast(dt).realize();
      const Tensor y = nn::conv2d(x, w, std::nullopt, {stride, stride}, {pad, pad});
      const schedule::Schedule sched = schedule::create_schedule({y.uop()});
      int gathered = 0;
      for (const auto &item : sched.items) {
        EXPECT_NE(item.name.rfind("pack", 0), 0u) << item.name;
        gathered += item.gemm && item.gemm->b.view;
      }
      EXPECT_EQ(gathered, 1);
      const std::vector<engine::RenderedKernel> ks = engine::render({y.uop()});
      for (const auto &k : ks) {
        if (k.cuda_source.find("loom_mma_") == std::string::npos) continue;
        // The window's coordinates from k and n apart, in 32 bits: no (k N + n) / (3 N).
        EXPECT_EQ(k.cuda_source.find("(k * "), std::string::npos) << k.cuda_source;
        EXPECT_NE(k.cuda_source.find("((uint32_t)k / 9u)"), std::string::npos) << k.cuda_source;
        if (runtime::cuda::nvrtc_missing().empty()) {
          const runtime::cuda::NvrtcResult r = runtime::cuda::nvrtc_compile(renderer::cuda_prelude() + k.cuda_source, "gemm.cu", "sm_80");
          EXPECT_TRUE(r.ok) << r.log;
        }
      }
      const HostTensor got = y.to_host();
      testing::GemmGathers packs(testing::kNoGathers);
      const HostTensor packed = nn::conv2d(x, w, std::nullopt, {stride, stride}, {pad, pad}).to_host();
      ASSERT_EQ(got.numel(), packed.numel());
      for (int64_t i = 0; i < got.numel(); i++) ASSERT_EQ(got.get(i), packed.get(i)) << i;
    }
}

// Without an extern GEMM, a half convolution's weight gradient reads both
// operands through their views, the output gradient (A, permuted to
// [O, N * Ho * Wo]) and the windows (B): no pack, the same bits as the
// packed operands' GEMM (the same halves summed in the same order), at
// stride 1 and 2; A by 16-byte copies where an image's outputs are a
// multiple of 8 (8 x 8), else element by element; NVRTC compiles it.
TEST(HalfConv, TheTensorCoreGemmGathersAWeightGradientsOperandsWithoutPacks) {
  if (!runtime::default_device().target().tensor_cores) GTEST_SKIP() << "no tensor-core GEMM on this device";
  if (knobs::noopt()) GTEST_SKIP() << "LOOM_NOOPT=1: GEMMs are not split";
  testing::MinMacs all(0);
  testing::ExternGemm off(false);
  for (DType dt : {DType::Float16, DType::BFloat16})
    for (auto [size, stride] : {std::pair<int64_t, int64_t>{9, 1}, {9, 2}, {8, 1}}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " size " + std::to_string(size) + " stride " + std::to_string(stride));
      const Tensor x = Tensor::randn({2, 3, size, size}).cast(dt).realize();
      Tensor w = Tensor::randn({5, 3, 3, 3}).cast(dt).realize();
      w.requires_grad_();
      const int64_t out = (size - 1) / stride + 1;
      const Tensor g = Tensor::randn({2, 5, out, out}).cast(dt).realize();
      auto weight_gradient = [&] { return autograd::grad({nn::conv2d(x, w, std::nullopt, stride, 1)}, {w}, {g})[0]; };
      const Tensor dw = weight_gradient();
      const schedule::Schedule sched = schedule::create_schedule({dw.uop()});
      int gathered = 0;
      for (const auto &item : sched.items) {
        EXPECT_NE(item.name.rfind("pack", 0), 0u) << item.name;
        gathered += item.gemm && item.gemm->a.view && item.gemm->b.view;
      }
      EXPECT_EQ(gathered, 1);
      int templates = 0;
      for (const auto &k : engine::render({dw.uop()})) {
        if (k.cuda_source.find("loom_mma_") == std::string::npos) continue;
        templates++;
        EXPECT_EQ(k.cuda_source.find("loom_cp_async16(&sa[") != std::string::npos, out * out % 8 == 0);
        if (runtime::cuda::nvrtc_missing().empty()) {
          const runtime::cuda::NvrtcResult r = runtime::cuda::nvrtc_compile(renderer::cuda_prelude() + k.cuda_source, "gemm.cu", "sm_80");
          EXPECT_TRUE(r.ok) << r.log;
        }
      }
      EXPECT_EQ(templates, 1);
      const HostTensor got = dw.to_host();
      testing::GemmGathers packs(testing::kNoGathers);
      const HostTensor packed = weight_gradient().to_host();
      ASSERT_EQ(got.numel(), packed.numel());
      for (int64_t i = 0; i < got.numel(); i++) ASSERT_EQ(got.get(i), packed.get(i)) << i;
    }
}

// Where the tensor-core template runs every half GEMM, an elementwise value
// of a GEMM's sum (a convolution's bias, a BatchNorm's scale and shift in
// eval mode, a ReLU, GELU, a residual, a runtime scalar, a float32 result) is the
// template's epilogue: one kernel, no E_ kernel, with the same bits as the
// GEMM into scratch and the epilogue kernel after it (the reference, whose
// schedule is checked to be that); NVRTC compiles it.
TEST(HalfConv, TheTensorCoreGemmComputesAnElementwiseEpilogueAsItStores) {
  if (!runtime::default_device().target().tensor_cores) GTEST_SKIP() << "no tensor-core GEMM on this device";
  if (knobs::noopt()) GTEST_SKIP() << "LOOM_NOOPT=1: GEMMs are not split";
  testing::MinMacs all(0);
  testing::ExternGemm off(false);
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    const Tensor x = Tensor::randn({2, 3, 9, 9}).cast(dt).realize(), w = Tensor::randn({5, 3, 3, 3}).cast(dt).realize();
    const Tensor bias = Tensor::randn({5}).cast(dt).realize(), scale = Tensor::randn({5, 1, 1}).realize();
    const Tensor shift = Tensor::randn({5, 1, 1}).cast(dt).realize(), residual = Tensor::randn({2, 5, 9, 9}).cast(dt).realize();
    const Tensor a = Tensor::randn({24, 40}).cast(dt).realize(), b = Tensor::randn({40, 16}).cast(dt).realize();
    const Tensor row = Tensor::randn({16}).realize();
    const std::vector<std::pair<std::string, std::function<Tensor()>>> cases{
        {"conv, bias, scale and shift, relu, residual",
         [&] { return nn::conv2d(x, w, bias, 1, 1).mul(scale).cast(dt).add(shift).relu().add(residual); }},
        {"conv times a runtime scalar, in float32",
         [&] { return nn::conv2d(x, w, std::nullopt, 2, 1).cast(DType::Float32).mul(0.5); }},
        {"conv, gelu (its input read twice, runtime scalars)", [&] { return nn::conv2d(x, w, bias, 1, 1).gelu(); }},
        {"matmul plus a row", [&] { return a.matmul(b).cast(DType::Float32).add(row); }},
    };
    for (const auto &[what, make] : cases) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + ": " + what);
      const Tensor y = make();
      const schedule::Schedule sched = schedule::create_schedule({y.uop()});
      ASSERT_EQ(sched.items.size(), 1u) << sched.items.at(1).name;
      ASSERT_TRUE(sched.items[0].gemm && sched.items[0].gemm->epilogue);
      const engine::RenderedKernel k = only_kernel(y);
      EXPECT_NE(k.cuda_source.find("loom_mma_"), std::string::npos);
      if (runtime::cuda::nvrtc_missing().empty()) {
        const runtime::cuda::NvrtcResult r = runtime::cuda::nvrtc_compile(renderer::cuda_prelude() + k.cuda_source, "gemm.cu", "sm_80");
        EXPECT_TRUE(r.ok) << r.log;
      }
      const HostTensor got = y.to_host();
      testing::GemmGathers packs(testing::kNoGathers);
      const Tensor split = make();
      int epilogues = 0;
      for (const auto &item : schedule::create_schedule({split.uop()}).items) epilogues += item.name.rfind("E_", 0) == 0;
      EXPECT_EQ(epilogues, 1);
      const HostTensor want = split.to_host();
      ASSERT_EQ(got.numel(), want.numel());
      for (int64_t i = 0; i < got.numel(); i++) ASSERT_EQ(got.get(i), want.get(i)) << i;
    }
  }
}

// A half GEMM without batch axes reads its A through its views only beside
// a gathered B (a weight gradient): an A whose two term axes merge into no
// stride, beside a B in memory, packs (the library that reads B reads it).
TEST(HalfMatmul, AnUnbatchedGemmGathersItsAOnlyBesideAGatheredB) {
  if (!runtime::default_device().target().tensor_cores) GTEST_SKIP() << "no tensor-core GEMM on this device";
  if (knobs::noopt()) GTEST_SKIP() << "LOOM_NOOPT=1: GEMMs are not split";
  testing::MinMacs all(0);
  testing::ExternGemm off(false);
  // out[i, j] = sum over p, q of a[i, p, q] b[p, q, j]; a[i, p, q] = x[q, p, i].
  const Tensor x = Tensor::randn({8, 16, 24}).cast(DType::Float16).realize();
  const Tensor b = Tensor::randn({16, 8, 40}).cast(DType::Float16).realize();
  const Tensor a = x.permute({2, 1, 0}).cast(DType::Float32).unsqueeze(3);
  const Tensor out = a.mul(b.cast(DType::Float32).unsqueeze(0)).sum({1, 2});
  const schedule::Schedule sched = schedule::create_schedule({out.uop()});
  int packs = 0, gemms = 0;
  for (const auto &item : sched.items) {
    packs += item.name.rfind("pack", 0) == 0;
    if (item.gemm) {
      gemms++;
      EXPECT_FALSE(item.gemm->a.view);
      EXPECT_FALSE(item.gemm->b.view);
    }
  }
  EXPECT_EQ(gemms, 1);
  EXPECT_EQ(packs, 1);
}

// The sort library kernel (argsort realizes its indices while it is built,
// so the replay corpus has none): rendered for CUDA and compiled by NVRTC.
TEST(CudaRenderer, TheSortKernelCompilesWithNvrtc) {
  if (!runtime::cuda::nvrtc_missing().empty()) GTEST_SKIP() << runtime::cuda::nvrtc_missing();
  for (auto [dt, n] : {std::pair{DType::Float32, 7}, {DType::Float16, 7}, {DType::Int32, 7}, {DType::Float32, 1500}}) {
    Tensor x = Tensor::randn({n, 5}).cast(dt).realize();  // 5 lines of n
    const uop::UOpRef sort =
        uop::UOp::make(uop::Op::Sort, DType::Int64, {x.uop()}, uop::ReduceArg{uop::Op::Max, {0}});
    const schedule::Schedule sched = schedule::create_schedule({sort});
    ASSERT_EQ(sched.items.size(), 1u);
    const renderer::CudaKernel k =
        renderer::render_cuda(codegen::kernel_spec(sched.items[0], nullptr, renderer::cuda_target()));
    EXPECT_EQ(k.blocks, n < 512 ? 1 : 5);  // a thread per line of 7, a block per line of 1500
    const runtime::cuda::NvrtcResult r = runtime::cuda::nvrtc_compile(renderer::cuda_prelude() + k.source, "sort.cu", "sm_80");
    EXPECT_TRUE(r.ok) << r.log << k.source;
  }
}

// argsort on every device (the CUDA target's sort keeps its runs in the
// output's own elements): a stable sort per line, NaN largest.
TEST(Sort, ArgsortIsAStableSortPerLineWithNaNLargest) {
  std::vector<double> v;
  for (int i = 0; i < 6 * 37; i++) v.push_back(i % 11 == 3 ? NAN : static_cast<double>((i * 7919) % 13) - 6);
  const Tensor x = Tensor::from_vector(v, {6, 37});
  for (bool descending : {false, true})
    for (int64_t dim : {0, 1}) {
      const HostTensor got = x.argsort(dim, descending).to_host();
      const int64_t lines = dim == 1 ? 6 : 37, n = dim == 1 ? 37 : 6;
      for (int64_t l = 0; l < lines; l++) {
        auto at = [&](int64_t k) { return dim == 1 ? v[static_cast<size_t>(l * 37 + k)] : v[static_cast<size_t>(k * 37 + l)]; };
        std::vector<int64_t> want(static_cast<size_t>(n));
        for (int64_t k = 0; k < n; k++) want[static_cast<size_t>(k)] = k;
        std::stable_sort(want.begin(), want.end(), [&](int64_t a, int64_t b) {
          const double x1 = at(a), y1 = at(b);
          if (std::isnan(x1) || std::isnan(y1)) return descending ? std::isnan(x1) && !std::isnan(y1) : !std::isnan(x1) && std::isnan(y1);
          return descending ? x1 > y1 : x1 < y1;
        });
        for (int64_t k = 0; k < n; k++) {
          const int64_t i = dim == 1 ? l * 37 + k : k * 37 + l;
          ASSERT_EQ(got.get(i), want[static_cast<size_t>(k)]) << "dim " << dim << " desc " << descending << " line " << l;
        }
      }
    }
}

// Lines of 512 or more elements sort a block each on the CUDA target (the
// launch: TheSortKernelCompilesWithNvrtc): every thread merges its share of
// each pass, however the shares and the runs fall (a line of 1500: shares
// of 6, runs cut short); the values are a stable sort's, NaN largest, both
// ways, along either dimension.
TEST(Sort, ALongLineSortsAcrossABlockAsAStableSort) {
  const int64_t lines = 3, n = 1500;
  std::vector<double> v;
  for (int64_t i = 0; i < lines * n; i++) v.push_back(i % 97 == 5 ? NAN : static_cast<double>((i * 7919) % 61) - 30);
  for (int64_t dim : {0, 1}) {
    const Tensor x = dim == 1 ? Tensor::from_vector(v, {lines, n}) : Tensor::from_vector(v, {n, lines});
    for (bool descending : {false, true}) {
      const HostTensor got = x.argsort(dim, descending).to_host();
      for (int64_t l = 0; l < lines; l++) {
        auto flat = [&](int64_t k) { return dim == 1 ? l * n + k : k * lines + l; };
        std::vector<int64_t> want(static_cast<size_t>(n));
        for (int64_t k = 0; k < n; k++) want[static_cast<size_t>(k)] = k;
        std::stable_sort(want.begin(), want.end(), [&](int64_t a, int64_t b) {
          const double x1 = v[static_cast<size_t>(flat(a))], y1 = v[static_cast<size_t>(flat(b))];
          if (std::isnan(x1) || std::isnan(y1)) return descending ? std::isnan(x1) && !std::isnan(y1) : !std::isnan(x1) && std::isnan(y1);
          return descending ? x1 > y1 : x1 < y1;
        });
        for (int64_t k = 0; k < n; k++)
          ASSERT_EQ(got.get(flat(k)), want[static_cast<size_t>(k)]) << "dim " << dim << " desc " << descending << " line " << l;
      }
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
  const std::string scan = engine::render({x.cumsum(1).uop()}).at(0).cuda_source;  // a block per line, then a cast
  ASSERT_NE(scan.find("loom_group_scan"), std::string::npos) << scan;
  const runtime::cuda::NvrtcResult s = runtime::cuda::nvrtc_compile(renderer::cuda_prelude() + scan, "scan.cu", "sm_90");
  EXPECT_TRUE(s.ok) << s.log;
  const runtime::cuda::NvrtcResult bad = runtime::cuda::nvrtc_compile(unit + "int broken(", "broken.cu", "sm_80");
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.log.find("error"), std::string::npos) << bad.log;
}

}  // namespace
}  // namespace loom
