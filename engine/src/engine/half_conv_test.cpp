// Half convolutions and GEMMs on the CUDA target: split into half packs and
// a half GEMM, handed to cuDNN, or gathered and finished (an epilogue) by
// the tensor-core template. What they compute is checked on
// LOOM_DEVICE=CUDA_EMULATOR (ctest's engine.CudaEmulator); NVRTC compiles
// the templates where it is present.
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
#include "schedule/gemm.h"
#include "schedule/schedule.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/device.h"
#include "renderer/cuda_renderer.h"

namespace loom {
namespace {

// NVRTC compiles a template's kernel for sm_80, where NVRTC is present.
void expect_nvrtc_compiles(const std::string &source) {
  if (!runtime::cuda::nvrtc_missing().empty()) return;
  const runtime::cuda::NvrtcResult r = runtime::cuda::nvrtc_compile(renderer::cuda_prelude() + source, "gemm.cu", "sm_80");
  EXPECT_TRUE(r.ok) << r.log;
}

// The same elements, bit for bit.
void expect_same_bits(const HostTensor &got, const HostTensor &want) {
  ASSERT_EQ(got.numel(), want.numel());
  for (int64_t i = 0; i < got.numel(); i++) ASSERT_EQ(got.get(i), want.get(i)) << i;
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
  // dx in the input's dtype; at stride 2 one per phase of the input (2 x 2,
  // 2 x 1, 1 x 2 and 1 x 1 taps) and a kernel adding them, placed; no
  // windows' gradient added back. cuDNN's descriptors read both tap axes of
  // the windows, which the GEMM split drops where they are one tap wide:
  // those two phases run as the template, the 1 x 1 one (its windows a
  // strided matrix) on cuBLAS. Its values the float32 gradient's of the
  // same halves.
  const std::vector<std::string> one{"pack_1_3_45", "cudnn conv"},
      phases{"pack_1_3_20",    "cudnn conv",  "pack_1_3_10",  "gemm_2_3_20_10", "pack_1_3_10",
             "gemm_2_3_20_10", "pack_1_3_5", "cublas gemm", "E_2_3_9_9"};
  for (DType dt : {DType::Float16, DType::BFloat16})
    for (int64_t stride : {1, 2}) {
      SCOPED_TRACE(std::string("input gradient ") + dtype_name(dt) + " stride " + std::to_string(stride));
      Tensor xi = Tensor::randn({2, 3, 9, 9}).cast(dt).realize(), wi = Tensor::randn({5, 3, 3, 3}).cast(dt).realize();
      const int64_t out = (9 - 1) / stride + 1;
      const Tensor g = Tensor::randn({2, 5, out, out}).cast(dt).realize();
      xi.requires_grad_();
      const Tensor dx = autograd::grad({nn::conv2d(xi, wi, std::nullopt, stride, 1)}, {xi}, {g})[0];
      std::vector<std::string> kernels;
      for (const engine::RenderedKernel &k : engine::render({dx.uop()}))
        kernels.push_back(k.library.empty() ? k.name : k.library);
      EXPECT_EQ(kernels, stride == 1 ? one : phases);
      const HostTensor got = dx.to_host();
      Tensor x32 = wide(xi.detach()).requires_grad_();
      const HostTensor want =
          autograd::grad({nn::conv2d(x32, wide(wi), std::nullopt, stride, 1)}, {x32}, {wide(g)})[0].to_host();
      ASSERT_EQ(got.numel(), want.numel());
      const double tol = dt == DType::Float16 ? 2e-3 : 1e-2;
      for (int64_t i = 0; i < got.numel(); i++)
        ASSERT_NEAR(got.get(i), want.get(i), tol * (std::abs(want.get(i)) + 1)) << i;
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
        expect_nvrtc_compiles(k.cuda_source);
      }
      const HostTensor got = y.to_host();
      testing::GemmGathers packs(testing::kNoGathers);
      const HostTensor packed = nn::conv2d(x, w, std::nullopt, {stride, stride}, {pad, pad}).to_host();
      expect_same_bits(got, packed);
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
        expect_nvrtc_compiles(k.cuda_source);
      }
      EXPECT_EQ(templates, 1);
      const HostTensor got = dw.to_host();
      testing::GemmGathers packs(testing::kNoGathers);
      const HostTensor packed = weight_gradient().to_host();
      expect_same_bits(got, packed);
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
      const std::vector<engine::RenderedKernel> ks = engine::render({y.uop()});
      ASSERT_EQ(ks.size(), 1u);
      const engine::RenderedKernel &k = ks[0];
      EXPECT_NE(k.cuda_source.find("loom_mma_"), std::string::npos);
      expect_nvrtc_compiles(k.cuda_source);
      const HostTensor got = y.to_host();
      testing::GemmGathers packs(testing::kNoGathers);
      const Tensor split = make();
      int epilogues = 0;
      for (const auto &item : schedule::create_schedule({split.uop()}).items) epilogues += item.name.rfind("E_", 0) == 0;
      EXPECT_EQ(epilogues, 1);
      const HostTensor want = split.to_host();
      expect_same_bits(got, want);
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

}  // namespace
}  // namespace loom
