// GEMM-shaped reductions: which kernels split into packs, a GEMM and an
// epilogue (schedule/gemm.h), what the GEMM reads, and the values of both
// ways of running it (generated code, the device's extern GEMM) against
// plain loops. conformance.GemmPath* checks every matmul, linear and conv2d
// property against libtorch on this path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>

#include "codegen/gemm_gather.h"
#include "codegen/pipeline.h"
#include "engine/realize.h"
#include "engine/testing/extern_gemm.h"
#include "engine/testing/gemm_settings.h"
#include "engine/testing/values.h"
#include "knobs/knobs.h"
#include "loom/autograd.h"
#include "loom/nn.h"
#include "loom/tensor.h"
#include "runtime/cpu/blas.h"
#include "runtime/device.h"
#include "runtime/cuda/cublas.h"
#include "schedule/gemm.h"
#include "schedule/gemm_split_k.h"
#include "uop/graph.h"

namespace loom {
namespace {

using testing::float_values;
using testing::GemmGathers;
using testing::kNoGathers;
using testing::MinMacs;

std::vector<std::string> names(const schedule::Schedule &s) {
  std::vector<std::string> n;
  for (auto &item : s.items) n.push_back(item.name);
  return n;
}

// out = relu(a @ b) (a @ b without `relu`) by plain loops in double.
std::vector<double> matmul_relu(const std::vector<float> &a, const std::vector<float> &b, int64_t m, int64_t k,
                                int64_t n, bool relu = true) {
  std::vector<double> out(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0;
      for (int64_t x = 0; x < k; x++) s += double{a[static_cast<size_t>(i * k + x)]} * b[static_cast<size_t>(x * n + j)];
      out[static_cast<size_t>(i * n + j)] = relu ? std::max(s, 0.0) : s;
    }
  return out;
}

// conv2d, stride 1, padding `pad`, by plain loops in double.
std::vector<double> conv(const std::vector<float> &x, const std::vector<float> &w, int64_t n, int64_t c, int64_t h,
                         int64_t o, int64_t k, int64_t pad) {
  const int64_t oh = h + 2 * pad - k + 1;
  std::vector<double> out(static_cast<size_t>(n * o * oh * oh));
  for (int64_t b = 0; b < n; b++)
    for (int64_t f = 0; f < o; f++)
      for (int64_t y = 0; y < oh; y++)
        for (int64_t z = 0; z < oh; z++) {
          double s = 0;
          for (int64_t ch = 0; ch < c; ch++)
            for (int64_t i = 0; i < k; i++)
              for (int64_t j = 0; j < k; j++) {
                const int64_t yy = y + i - pad, zz = z + j - pad;
                if (yy < 0 || yy >= h || zz < 0 || zz >= h) continue;
                s += double{x[static_cast<size_t>(((b * c + ch) * h + yy) * h + zz)]} *
                     w[static_cast<size_t>(((f * c + ch) * k + i) * k + j)];
              }
          out[static_cast<size_t>(((b * o + f) * oh + y) * oh + z)] = s;
        }
  return out;
}

void expect_close(const std::vector<float> &got, const std::vector<double> &want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << "at " << i;
}

TEST(GemmSplit, APlainMatmulIsOneGemmKernelReadingItsOperandsInPlace) {
  if (testing::no_opt()) GTEST_SKIP() << "LOOM_NOOPT=1: GEMMs are not split";
  Tensor a = Tensor::randn({256, 128}).realize(), b = Tensor::randn({128, 192}).realize();
  const schedule::Schedule s = schedule::create_schedule({a.matmul(b).uop()});
  ASSERT_EQ(names(s), std::vector<std::string>{"gemm_256_192_128"});
  const std::shared_ptr<const schedule::GemmShape> g = s.items[0].gemm;
  ASSERT_TRUE(g);
  EXPECT_TRUE(g->batch.empty());
  EXPECT_EQ(std::vector<int64_t>({g->m, g->n, g->k}), std::vector<int64_t>({256, 192, 128}));
  EXPECT_EQ(std::vector<int64_t>({g->a.row_stride, g->a.col_stride, g->b.row_stride, g->b.col_stride}),
            std::vector<int64_t>({128, 1, 192, 1}));
  // A transposed operand is still a matrix: read in place, column-major.
  const schedule::Schedule t = schedule::create_schedule({a.transpose(0, 1).matmul(a).uop()});
  ASSERT_EQ(names(t), std::vector<std::string>{"gemm_128_128_256"});
  ASSERT_TRUE(t.items[0].gemm);
  EXPECT_EQ(t.items[0].gemm->a.row_stride, 1);
  // The same structure again comes from the schedule cache, its shape with it.
  Tensor c = Tensor::randn({256, 128}).realize(), d = Tensor::randn({128, 192}).realize();
  const schedule::Schedule again = schedule::create_schedule({c.matmul(d).uop()});
  ASSERT_TRUE(again.cached);
  ASSERT_EQ(again.items.size(), 1u);
  EXPECT_EQ(again.items[0].gemm, g);
}

// A convolution whose result a max-pool reads: the GEMM writes the
// convolution's output itself (its value reaches the pool through a reshape
// and a copy point's marker, both in order), no epilogue copying it.
TEST(GemmSplit, AConvolutionsGemmWritesTheOutputAPoolReads) {
  if (testing::no_opt()) GTEST_SKIP() << "LOOM_NOOPT=1: GEMMs are not split";
  testing::ExternGemm on(true);
  GemmGathers packed(kNoGathers);  // the windows packed (64 rows: the template would gather them)
  Tensor x = Tensor::randn({2, 24, 31, 31}).realize(), w = Tensor::randn({64, 24, 3, 3}).realize();
  const Tensor y = nn::max_pool2d(nn::conv2d(x, w, std::nullopt, 1, 1), 2);
  EXPECT_EQ(names(schedule::create_schedule({y.uop()})),
            (std::vector<std::string>{"pack_2_216_961", "gemm_2_64_961_216", "r_2_64_15_15_1", "r_2_64_15_15_1",
                                      "r_2_64_15_15_1"}));
}

TEST(GemmSplit, SmallReductionsStayOneKernel) {
  Tensor a = Tensor::randn({16, 12}).realize(), b = Tensor::randn({12, 16}).realize();
  const schedule::Schedule s = schedule::create_schedule({a.matmul(b).relu().uop()});
  EXPECT_EQ(names(s), std::vector<std::string>{"r_16_16"});
  EXPECT_FALSE(s.items[0].gemm);  // a float32 GEMM fused with its epilogue is no canonical one
  // A sum of squares reads both factors along every axis: not a GEMM at any size.
  Tensor x = Tensor::randn({512, 512}).realize();
  EXPECT_EQ(names(schedule::create_schedule({(x * x).sum({1}).uop()})), std::vector<std::string>{"r_512_1"});
}

TEST(GemmSplit, AConvolutionPacksItsWindowsAndReadsItsWeightsInPlace) {
  if (testing::no_opt()) GTEST_SKIP() << "LOOM_NOOPT=1: GEMMs are not split";
  testing::ExternGemm on(true);
  GemmGathers packed(kNoGathers);  // the windows packed (64 rows: the template would gather them)
  Tensor x = Tensor::randn({8, 24, 31, 31}).realize(), w = Tensor::randn({64, 24, 3, 3}).realize();
  Tensor bias = Tensor::randn({64}).realize();
  const schedule::Schedule s = schedule::create_schedule({nn::conv2d(x, w, bias, 1, 1).uop()});
  const std::vector<std::string> n = names(s);
  ASSERT_GE(n.size(), 3u);
  // ...the movement ops' copies, then the windows as 8 matrices (24*3*3 x 31*31),
  // the GEMM per image (weights 64 x 216, broadcast over the batch), the bias.
  EXPECT_EQ(std::vector<std::string>(n.end() - 3, n.end()),
            std::vector<std::string>({"pack_8_216_961", "gemm_8_64_961_216", "E_8_64_31_31"}));
  for (size_t i = 0; i < s.items.size(); i++) EXPECT_EQ(bool(s.items[i].gemm), i == s.items.size() - 2) << n[i];
  const std::shared_ptr<const schedule::GemmShape> g = s.items[s.items.size() - 2].gemm;
  ASSERT_TRUE(g);
  EXPECT_EQ(g->batch, std::vector<int64_t>{8});
  EXPECT_EQ(g->a.batch_strides, std::vector<int64_t>{0});
  EXPECT_EQ(s.items[s.items.size() - 2].bufs[static_cast<size_t>(g->a.slot)],
            uop::base_of(w.uop())->arg_as<uop::BufferArg>().buffer);
}

// Where the GEMM runs as the C target's packed template (no extern GEMM), a
// convolution's windows are no pack: the template gathers them from the
// image into its panels, zero in the padding. The values are the plain
// loops', and bit for bit those of the packed windows' GEMM, at stride 1
// and 2, with and without padding.
TEST(GemmSplit, TheTemplateGathersAConvolutionsWindowsWithoutAPack) {
  if (testing::no_opt()) GTEST_SKIP() << "LOOM_NOOPT=1: GEMMs are not split";
  if (!runtime::default_device().target().packed_gemm) GTEST_SKIP() << "no packed GEMM template on this device";
  testing::ExternGemm off(false);
  const int64_t n = 4, c = 24, h = 31, o = 64;
  Tensor x = Tensor::randn({n, c, h, h}).realize(), w = Tensor::randn({o, c, 3, 3}).realize();
  const schedule::Schedule s = schedule::create_schedule({nn::conv2d(x, w, std::nullopt, 1, 1).uop()});
  ASSERT_EQ(names(s), std::vector<std::string>{"gemm_4_64_961_216"});
  ASSERT_TRUE(s.items[0].gemm);
  EXPECT_TRUE(s.items[0].gemm->b.view);
  EXPECT_FALSE(s.items[0].gemm->a.view);
  expect_close(float_values(nn::conv2d(x, w, std::nullopt, 1, 1)),
               conv(float_values(x), float_values(w), n, c, h, o, 3, 1));
  // Small images: the images join the GEMM's columns, (image, row, column).
  Tensor small = Tensor::randn({8, 32, 7, 7}).realize(), ws = Tensor::randn({64, 32, 3, 3}).realize();
  const schedule::Schedule merged = schedule::create_schedule({nn::conv2d(small, ws, std::nullopt, 1, 1).uop()});
  ASSERT_EQ(names(merged), (std::vector<std::string>{"gemm_64_392_288", "E_8_64_7_7"}));
  EXPECT_TRUE(merged.items[0].gemm->b.view);
  // Gathered by runs of the image's rows, and element by element (the
  // template's way where its views leave no runs).
  for (bool runs : {true, false}) {
    const bool runs_were = codegen::set_gather_runs(runs);
    engine::clear_kernel_cache();
    for (auto [image, weight] : {std::pair{x, w}, {small, ws}})
      for (auto [stride, pad] : {std::pair<int64_t, int64_t>{1, 1}, {2, 1}, {1, 0}, {2, 0}}) {
        const std::vector<float> gathered = float_values(nn::conv2d(image, weight, std::nullopt, stride, pad));
        GemmGathers off(kNoGathers);
        const std::vector<float> packed = float_values(nn::conv2d(image, weight, std::nullopt, stride, pad));
        ASSERT_EQ(gathered.size(), packed.size());
        for (size_t i = 0; i < packed.size(); i++)
          ASSERT_EQ(gathered[i], packed[i]) << (runs ? "runs, " : "elements, ") << image.shape()[2] << " stride "
                                            << stride << " pad " << pad << " at " << i;
      }
    codegen::set_gather_runs(runs_were);
    engine::clear_kernel_cache();
  }
}

// A convolution's weight gradient sums over the images and pixels: for a
// library GEMM its windows' pack stores them transposed, (taps, pixels), so
// that the pack's inner loop walks an image row rather than 3 taps, and the
// GEMM reads that operand column-major; the C target's packed template
// gathers them itself, down the image rows, bit for bit as from that pack;
// GEMM code lowered as loops gets them row-major. The values are the plain
// loops' every way.
TEST(GemmSplit, AWeightGradientPacksItsWindowsAlongTheImageRows) {
  if (testing::no_opt()) GTEST_SKIP() << "LOOM_NOOPT=1: GEMMs are not split";
  const int64_t n = 4, c = 8, h = 17, o = 16;
  const std::vector<float> xv = float_values(Tensor::randn({n, c, h, h}));
  const std::vector<float> gv = float_values(Tensor::randn({n, o, h, h}));
  std::vector<double> want(static_cast<size_t>(o * c * 9));
  for (int64_t f = 0; f < o; f++)
    for (int64_t ch = 0; ch < c; ch++)
      for (int64_t i = 0; i < 3; i++)
        for (int64_t j = 0; j < 3; j++) {
          double s = 0;
          for (int64_t b = 0; b < n; b++)
            for (int64_t y = 0; y < h; y++)
              for (int64_t z = 0; z < h; z++) {
                const int64_t yy = y + i - 1, zz = z + j - 1;
                if (yy < 0 || yy >= h || zz < 0 || zz >= h) continue;
                s += double{gv[static_cast<size_t>(((b * o + f) * h + y) * h + z)]} *
                     xv[static_cast<size_t>(((b * c + ch) * h + yy) * h + zz)];
              }
          want[static_cast<size_t>(((f * c + ch) * 3 + i) * 3 + j)] = s;
        }
  MinMacs all(0);
  for (bool ext : {false, true}) {
    SCOPED_TRACE(ext ? "extern" : "generated");
    testing::ExternGemm setting(ext);
    // A library's GEMM (16 rows: beside one, the template would gather them)
    std::optional<GemmGathers> library;
    if (ext) library.emplace(kNoGathers);
    Tensor x = Tensor::from_vector({xv.begin(), xv.end()}, {n, c, h, h});
    Tensor g = Tensor::from_vector({gv.begin(), gv.end()}, {n, o, h, h});
    Tensor w = Tensor::randn({o, c, 3, 3}).realize().requires_grad_();
    const Tensor dw = autograd::grad({nn::conv2d(x, w, std::nullopt, 1, 1).mul(g).sum()}, {w})[0];
    const schedule::Schedule s = schedule::create_schedule({dw.uop()});
    const std::vector<std::string> names_ = names(s);
    const std::string pixels = std::to_string(n * h * h);
    if (!ext && runtime::default_device().target().packed_gemm) {  // the template gathers the windows down their rows
      for (const std::string &pack : {"pack_72_" + pixels, "pack_" + pixels + "_72"})
        EXPECT_EQ(std::find(names_.begin(), names_.end(), pack), names_.end()) << pack;
      for (auto &item : s.items)
        if (item.gemm) {
          EXPECT_TRUE(item.gemm->b.view);
        }
      const std::vector<float> gathered = float_values(dw);
      GemmGathers off(kNoGathers);
      const std::vector<float> packed = float_values(autograd::grad({nn::conv2d(x, w, std::nullopt, 1, 1).mul(g).sum()}, {w})[0]);
      ASSERT_EQ(gathered, packed);
    } else {
      const std::string pack = ext ? "pack_72_" + pixels : "pack_" + pixels + "_72";
      EXPECT_NE(std::find(names_.begin(), names_.end(), pack), names_.end()) << pack;
      for (auto &item : s.items)
        if (item.gemm) {
          EXPECT_EQ(item.gemm->b.row_stride == 1, ext) << "B read column-major where it reads either way";
        }
    }
    expect_close(float_values(dw), want);
  }
}

// A stride-1 convolution's input gradient is a convolution of the output
// gradient: per image one GEMM of the weights, flipped and packed (24 x 576
// values), and the output gradient's windows, read in place where the GEMM
// gathers (else packed), writing the gradient itself: no windows' gradient
// added back tap by tap. The values are the plain loops' both ways.
TEST(GemmSplit, AnInputGradientIsOneBatchedGemmOverTheOutputGradientsWindows) {
  if (testing::no_opt()) GTEST_SKIP() << "LOOM_NOOPT=1: GEMMs are not split";
  const int64_t n = 8, c = 24, h = 31, o = 64;
  Tensor x = Tensor::randn({n, c, h, h}).realize().requires_grad_();
  Tensor w = Tensor::randn({o, c, 3, 3}).realize(), g = Tensor::randn({n, o, h, h}).realize();
  const std::vector<float> wv = float_values(w), gv = float_values(g);
  std::vector<double> want(static_cast<size_t>(n * c * h * h));
  for (int64_t b = 0; b < n; b++)
    for (int64_t ch = 0; ch < c; ch++)
      for (int64_t y = 0; y < h; y++)
        for (int64_t z = 0; z < h; z++) {
          double sum = 0;  // output [y + 1 - i, z + 1 - j] read x[y, z] at tap (i, j)
          for (int64_t f = 0; f < o; f++)
            for (int64_t i = 0; i < 3; i++)
              for (int64_t j = 0; j < 3; j++) {
                const int64_t yy = y + 1 - i, zz = z + 1 - j;
                if (yy < 0 || yy >= h || zz < 0 || zz >= h) continue;
                sum += double{gv[static_cast<size_t>(((b * o + f) * h + yy) * h + zz)]} *
                       wv[static_cast<size_t>(((f * c + ch) * 3 + i) * 3 + j)];
              }
          want[static_cast<size_t>(((b * c + ch) * h + y) * h + z)] = sum;
        }
  auto buffer_of = [](const Tensor &t) { return uop::base_of(t.uop())->arg_as<uop::BufferArg>().buffer; };
  for (bool gather : {true, false}) {
    SCOPED_TRACE(gather ? "gathered" : "packed");
    GemmGathers rule(gather ? schedule::GatherRule{schedule::Gathers::All, false, false} : kNoGathers);
    const Tensor dx = autograd::grad({nn::conv2d(x, w, std::nullopt, 1, 1)}, {x}, {g})[0];
    const schedule::Schedule s = schedule::create_schedule({dx.uop()});
    const std::vector<std::string> want_names =
        gather ? std::vector<std::string>{"pack_1_24_576", "gemm_8_24_961_576"}
               : std::vector<std::string>{"pack_1_24_576", "pack_8_576_961", "gemm_8_24_961_576"};
    ASSERT_EQ(names(s), want_names);
    const std::shared_ptr<const schedule::GemmShape> gemm = s.items.back().gemm;
    ASSERT_TRUE(gemm);
    EXPECT_NE(s.items.back().bufs[static_cast<size_t>(gemm->a.slot)], buffer_of(w));
    EXPECT_EQ(s.items.back().bufs[static_cast<size_t>(gemm->b.slot)] == buffer_of(g), gather);
    EXPECT_EQ(gemm->b.view != nullptr, gather);
    expect_close(float_values(dx), want);
  }
}

TEST(GemmSplit, GeneratedAndExternGemmsComputeTheSameValuesAsPlainLoops) {
  if (testing::no_opt()) GTEST_SKIP() << "LOOM_NOOPT=1: GEMMs are not split";
  const std::vector<float> av = float_values(Tensor::randn({96, 80})), bv = float_values(Tensor::randn({80, 112}));
  const std::vector<float> xv = float_values(Tensor::randn({4, 16, 13, 13})), wv = float_values(Tensor::randn({32, 16, 3, 3}));
  const std::vector<double> want_mm = matmul_relu(av, bv, 96, 80, 112), want_conv = conv(xv, wv, 4, 16, 13, 32, 3, 1);
  MinMacs all(0);
  for (bool ext : {false, true}) {
    SCOPED_TRACE(ext ? "extern" : "generated");
    testing::ExternGemm setting(ext);
    Tensor a = Tensor::from_vector({av.begin(), av.end()}, {96, 80});
    Tensor b = Tensor::from_vector({bv.begin(), bv.end()}, {80, 112});
    Tensor x = Tensor::from_vector({xv.begin(), xv.end()}, {4, 16, 13, 13});
    Tensor w = Tensor::from_vector({wv.begin(), wv.end()}, {32, 16, 3, 3});
    const Tensor mm = a.matmul(b).relu(), cv = nn::conv2d(x, w, std::nullopt, 1, 1);
    EXPECT_EQ(names(schedule::create_schedule({mm.uop()})), std::vector<std::string>({"gemm_96_112_80", "E_96_112"}));
    EXPECT_EQ(names(schedule::create_schedule({cv.uop()})).back(), "gemm_4_32_169_144");
    expect_close(float_values(mm), want_mm);
    expect_close(float_values(cv), want_conv);
  }
}

// Split-K (schedule/gemm_split_k.h): a GEMM of few outputs and a long sum
// (a covariance) is a batch of GEMMs over chunks of 4096 terms, each a
// partial sum, and an epilogue adding the partials; generated and extern,
// within float32 rounding of the sum in double. Many outputs keep one sum
// each.
TEST(GemmSplit, AGemmOfFewOutputsAndALongSumAddsPartialSumsOfChunks) {
  if (testing::no_opt()) GTEST_SKIP() << "LOOM_NOOPT=1: GEMMs are not split";
  const std::vector<float> av = float_values(Tensor::randn({16, 65536})), bv = float_values(Tensor::randn({65536, 12}));
  const std::vector<double> want = matmul_relu(av, bv, 16, 65536, 12, false);
  // Float32 sums of 65536 products: within 2^-20 of the products' magnitudes summed.
  std::vector<float> abs_a(av.size()), abs_b(bv.size());
  std::transform(av.begin(), av.end(), abs_a.begin(), [](float v) { return std::abs(v); });
  std::transform(bv.begin(), bv.end(), abs_b.begin(), [](float v) { return std::abs(v); });
  const std::vector<double> scale = matmul_relu(abs_a, abs_b, 16, 65536, 12, false);
  for (bool ext : {false, true}) {
    SCOPED_TRACE(ext ? "extern" : "generated");
    testing::ExternGemm setting(ext);
    const Tensor a = Tensor::from_vector({av.begin(), av.end()}, {16, 65536});
    const Tensor b = Tensor::from_vector({bv.begin(), bv.end()}, {65536, 12});
    const Tensor c = a.matmul(b);
    const schedule::Schedule s = schedule::create_schedule({c.uop()});
    ASSERT_EQ(names(s), std::vector<std::string>({"gemm_16_16_12_4096", "E_16_1_12"}));
    ASSERT_TRUE(s.items[0].gemm);
    EXPECT_EQ(s.items[0].gemm->batch, Shape{16});
    EXPECT_EQ(s.items[0].gemm->k, 4096);
    const std::vector<float> got = float_values(c);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); i++) ASSERT_NEAR(got[i], want[i], scale[i] / (1 << 20)) << "at " << i;
  }
  const Tensor wide = Tensor::randn({256, 8192}).realize(), tall = Tensor::randn({8192, 128}).realize();
  EXPECT_EQ(names(schedule::create_schedule({wide.matmul(tall).uop()})), std::vector<std::string>{"gemm_256_128_8192"});
  EXPECT_EQ(schedule::k_chunks(16 * 12, 4801), 1);       // too few terms
  EXPECT_EQ(schedule::k_chunks(144, 4805000), 1000);     // the most chunks of 4096 or more that divide the terms
  EXPECT_EQ(schedule::k_chunks(144, 1000003), 1);        // a prime: no divisor
}

TEST(GemmSplit, ScratchBuffersAreFreedAndWorkIsTheGraphs) {
  Tensor x = Tensor::randn({8, 24, 31, 31}).realize(), w = Tensor::randn({64, 24, 3, 3}).realize();
  const int64_t before = memory_stats().live_bytes;
  reset_run_stats();
  Tensor y = nn::conv2d(x, w, std::nullopt, 1, 1).realize();
  EXPECT_EQ(memory_stats().live_bytes - before, 8 * 64 * 31 * 31 * 4);  // only the output stays
  EXPECT_EQ(run_stats().work, run_stats().work_needed);
}

// The schedule cache keeps a structure's kernels split: a realize of the
// same structure over other buffers runs them with a scratch buffer of its
// own, and a changed threshold cuts the structure again.
TEST(GemmSplit, ACachedStructureKeepsItsSplitsUntilTheThresholdChanges) {
  if (testing::no_opt()) GTEST_SKIP() << "LOOM_NOOPT=1: GEMMs are not split";
  auto matmul_relu_of = [](const std::vector<float> &av, const std::vector<float> &bv) {
    const Tensor a = Tensor::from_vector({av.begin(), av.end()}, {48, 40});
    return a.matmul(Tensor::from_vector({bv.begin(), bv.end()}, {40, 56})).relu();
  };
  std::vector<std::shared_ptr<uop::Buffer>> scratch;
  {
    MinMacs all(0);
    for (int step = 0; step < 3; step++) {
      const std::vector<float> av = float_values(Tensor::randn({48, 40})), bv = float_values(Tensor::randn({40, 56}));
      const Tensor mm = matmul_relu_of(av, bv);
      const schedule::Schedule s = schedule::create_schedule({mm.uop()});
      EXPECT_EQ(names(s), std::vector<std::string>({"gemm_48_56_40", "E_48_56"})) << "step " << step;
      EXPECT_EQ(s.cached, step > 0) << "step " << step;
      ASSERT_EQ(s.transient.size(), 1u) << "step " << step;  // the GEMM's result, read by the epilogue
      EXPECT_EQ(s.items[0].bufs[0], s.transient[0]);
      EXPECT_EQ(s.items[1].bufs[1], s.transient[0]);
      for (auto &b : scratch) EXPECT_NE(b, s.transient[0]) << "step " << step;
      scratch.push_back(s.transient[0]);
      expect_close(float_values(mm), matmul_relu(av, bv, 48, 40, 56));
    }
  }
  const schedule::Schedule s = schedule::create_schedule({matmul_relu_of(float_values(Tensor::randn({48, 40})),
                                                                         float_values(Tensor::randn({40, 56})))
                                                              .uop()});
  EXPECT_EQ(names(s), std::vector<std::string>({"r_48_56"}));
  EXPECT_FALSE(s.cached);
}

// Why this run has no OpenBLAS GEMM to test, or "".
std::string why_no_openblas_gemm() {
  if (!testing::on_cpu()) return "OpenBLAS is the CPU device's extern GEMM";
  if (testing::no_opt()) return "LOOM_NOOPT=1: GEMMs are not split";
  std::string why;
  return runtime::cpu::have_openblas(&why) ? "" : why;
}

TEST(GemmSplit, ExternGemmIsOpenBlasWhereItLoads) {
  if (const std::string why = why_no_openblas_gemm(); !why.empty()) GTEST_SKIP() << why;
  testing::ExternGemm on(true);
  Tensor a = Tensor::randn({256, 128}).realize(), b = Tensor::randn({128, 192}).realize();
  const std::vector<engine::ExecItem> items = engine::exec_items(schedule::create_schedule({a.matmul(b).uop()}));
  ASSERT_EQ(items.size(), 1u);
  ASSERT_NE(items[0].program->library(), nullptr);
  EXPECT_STREQ(items[0].program->library(), "openblas sgemm");
  testing::ExternGemm off(false);
  EXPECT_EQ(engine::exec_items(schedule::create_schedule({a.matmul(b).uop()}))[0].program->library(), nullptr);
}

// Beside a library, a convolution's windows are gathered by the template
// where its GEMM has few rows (64 filters: packing the windows would cost
// half the library's GEMM) and packed for the library above that (128).
TEST(GemmSplit, BesideALibraryTheTemplateGathersTheWindowsOfGemmsOfFewRows) {
  if (const std::string why = why_no_openblas_gemm(); !why.empty()) GTEST_SKIP() << why;
  testing::ExternGemm on(true);
  const int64_t n = 4, c = 24, h = 15;
  Tensor x = Tensor::randn({n, c, h, h}).realize();
  for (int64_t o : {64, 128}) {
    SCOPED_TRACE(std::to_string(o) + " filters");
    Tensor w = Tensor::randn({o, c, 3, 3}).realize();
    const Tensor y = nn::conv2d(x, w, std::nullopt, 1, 1);
    const schedule::Schedule s = schedule::create_schedule({y.uop()});
    const std::vector<engine::ExecItem> items = engine::exec_items(s);
    ASSERT_EQ(items.size(), s.items.size());
    int gemms = 0, packs = 0;
    for (size_t i = 0; i < s.items.size(); i++) {
      packs += s.items[i].name.rfind("pack", 0) == 0;
      if (!s.items[i].gemm) continue;
      gemms++;
      EXPECT_EQ(bool(s.items[i].gemm->b.view), o <= 64);
      EXPECT_EQ(items[i].program->library() != nullptr, o > 64);
    }
    EXPECT_EQ(gemms, 1);
    EXPECT_EQ(packs, o > 64 ? 1 : 0);
    expect_close(float_values(y), conv(float_values(x), float_values(w), n, c, h, o, 3, 1));
  }
}

// A batch of GEMMs (two or more per thread) runs over the pool's threads, each
// GEMM on one thread; one GEMM alone runs on all of OpenBLAS's threads. The
// values agree to float32 rounding, not bit for bit: OpenBLAS on one thread
// and on two sums differently (with OPENBLAS_NUM_THREADS=1 the bits are equal).
TEST(GemmSplit, ABatchOfOpenBlasGemmsOverThePoolsThreadsIsEachGemmAlone) {
  if (const std::string why = why_no_openblas_gemm(); !why.empty()) GTEST_SKIP() << why;
  testing::ExternGemm on(true);
  const int64_t batch = 8;
  const int64_t m = 256, k = 128, n = 192;  // large enough for an extern GEMM alone
  Tensor a = Tensor::randn({batch, m, k}).realize(), b = Tensor::randn({batch, k, n}).realize();
  const Tensor c = a.matmul(b);
  const std::vector<engine::ExecItem> items = engine::exec_items(schedule::create_schedule({c.uop()}));
  ASSERT_EQ(items.size(), 1u);
  ASSERT_NE(items[0].program->library(), nullptr);
  EXPECT_TRUE(items[0].parallel);
  const std::vector<float> got = float_values(c);
  for (int64_t i = 0; i < batch; i++) {
    const Tensor ai = a.slice(0, i, i + 1).reshape({m, k}).contiguous().realize();
    const Tensor bi = b.slice(0, i, i + 1).reshape({k, n}).contiguous().realize();
    const std::vector<engine::ExecItem> alone = engine::exec_items(schedule::create_schedule({ai.matmul(bi).uop()}));
    ASSERT_EQ(alone.size(), 1u);
    ASSERT_NE(alone[0].program->library(), nullptr);  // OpenBLAS too, on its own threads
    const std::vector<float> want = float_values(ai.matmul(bi));
    for (size_t j = 0; j < want.size(); j++) {
      const float g = got[j + static_cast<size_t>(i * m * n)];
      ASSERT_NEAR(g, want[j], 1e-5 * (std::fabs(want[j]) + std::sqrt(double(k)))) << "batch element " << i << ", " << j;
    }
  }
}

// One GEMM alone runs as one block of rows or columns per pool thread (the
// longer side cut), each an sgemm call on one OpenBLAS thread, for every
// orientation sgemm takes: A and B each read in place row-major or
// transposed. Every element is within float32 rounding of the sum in double.
TEST(GemmSplit, AnOpenBlasGemmAloneIsOneBlockPerThreadInEveryOrientation) {
  if (const std::string why = why_no_openblas_gemm(); !why.empty()) GTEST_SKIP() << why;
  testing::ExternGemm on(true);
  for (auto [m, n] : {std::pair<int64_t, int64_t>{200, 72}, {72, 200}})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + (ta ? " A^T" : "") + (tb ? " B^T" : ""));
        const int64_t k = 300;
        Tensor a = (ta ? Tensor::randn({k, m}) : Tensor::randn({m, k})).realize();
        Tensor b = (tb ? Tensor::randn({n, k}) : Tensor::randn({k, n})).realize();
        const Tensor av = ta ? a.permute({1, 0}) : a, bv = tb ? b.permute({1, 0}) : b;
        const Tensor c = av.matmul(bv);
        const std::vector<engine::ExecItem> items = engine::exec_items(schedule::create_schedule({c.uop()}));
        ASSERT_EQ(items.size(), 1u);
        ASSERT_NE(items[0].program->library(), nullptr);
        EXPECT_TRUE(items[0].parallel);
        const std::vector<float> got = float_values(c), x = float_values(av.contiguous()), y = float_values(bv.contiguous());
        for (int64_t i = 0; i < m; i++)
          for (int64_t j = 0; j < n; j++) {
            double want = 0, mag = 0;
            for (int64_t q = 0; q < k; q++) {
              const double p = double(x[static_cast<size_t>(i * k + q)]) * double(y[static_cast<size_t>(q * n + j)]);
              want += p;
              mag += std::fabs(p);
            }
            ASSERT_NEAR(got[static_cast<size_t>(i * n + j)], want, 1e-6 * mag + 1e-6) << i << ", " << j;
          }
      }
}

// On CUDA (and its emulator) the extern GEMM is cuBLAS, for float32 and half
// matmuls alike (a float32 one large enough for the GEMM split, a half one
// at any size); with it off, generated code (the half one on tensor cores).
TEST(GemmSplit, ExternGemmIsCublasOnCuda) {
  if (testing::on_cpu()) GTEST_SKIP() << "cuBLAS is the CUDA device's extern GEMM";
  if (testing::no_opt()) GTEST_SKIP() << "LOOM_NOOPT=1: GEMMs are not split";
  const bool emulated = knobs::device() == "CUDA_EMULATOR";
  if (!emulated && !runtime::cuda::cublas()) GTEST_SKIP() << runtime::cuda::cublas_missing();
  // The library each kernel of a's and b's product runs ("" for generated code).
  auto libraries = [](const Tensor &a, const Tensor &b) {
    std::vector<std::string> libs;
    for (const engine::ExecItem &e : engine::exec_items(schedule::create_schedule({a.matmul(b).uop()})))
      libs.push_back(e.program->library() ? e.program->library() : "");
    return libs;
  };
  for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor a = Tensor::randn({256, 128}).cast(dt).realize(), b = Tensor::randn({128, 192}).cast(dt).realize();
    testing::ExternGemm on(true);
    const std::vector<std::string> ext = libraries(a, b);
    EXPECT_EQ(std::count(ext.begin(), ext.end(), "cublas gemm"), 1);
    EXPECT_EQ(std::count(ext.begin(), ext.end(), ""), static_cast<std::ptrdiff_t>(ext.size()) - 1);
    testing::ExternGemm off(false);
    const std::vector<std::string> gen = libraries(a, b);
    EXPECT_EQ(std::count(gen.begin(), gen.end(), ""), static_cast<std::ptrdiff_t>(gen.size()));
  }
}

// A generated float32 GEMM on the CPU is the packed template (renderer/c_gemm.h),
// each element summing its products in k order: the plain loop's bits
// (folded as the target folds a product, testing::add_product).
TEST(GemmSplit, AGeneratedGemmIsThePackedTemplateWithThePlainLoopsValues) {
  if (!testing::on_cpu()) GTEST_SKIP() << "the packed template is the C target's";
  if (testing::no_opt()) GTEST_SKIP() << "LOOM_NOOPT=1: GEMMs run as plain loops";
  testing::ExternGemm generated(false);
  const int64_t m = 16, k = 512, n = 1024;
  Tensor a = Tensor::randn({m, k}).realize(), b = Tensor::randn({k, n}).realize();
  const Tensor c = a.matmul(b);
  const schedule::Schedule s = schedule::create_schedule({c.uop()});
  ASSERT_EQ(s.items.size(), 1u);
  const codegen::KernelSpec p = codegen::kernel_spec(s.items[0], nullptr, runtime::default_device().target());
  EXPECT_GT(p.tiles.rows, 0);
  EXPECT_EQ(p.library, s.items[0].ast);
  EXPECT_EQ(p.work, 2 * m * n * k);
  const std::vector<float> av = float_values(a), bv = float_values(b), cv = float_values(c);
  const bool fused = testing::fused_multiply_add();
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      float acc = 0;
      for (int64_t x = 0; x < k; x++)
        acc = testing::add_product(acc, av[static_cast<size_t>(i * k + x)], bv[static_cast<size_t>(x * n + j)], fused);
      ASSERT_EQ(cv[static_cast<size_t>(i * n + j)], acc) << i << ", " << j;
    }
}

// The block pass (codegen/block.h): a matmul under the split's threshold
// stays one lowered kernel; where its second operand is larger than L2 it
// runs 64-column blocks outermost (split across the threads).
TEST(GemmSplit, ALargeUnsplitMatmulRunsColumnBlocksOutermost) {
  if (!testing::on_cpu()) GTEST_SKIP() << "the block pass is the CPU target's";
  if (testing::no_opt()) GTEST_SKIP() << "LOOM_NOOPT=1: no blocks";
  MinMacs none(int64_t{1} << 40);
  const int64_t m = 16, k = 512, n = 1024;  // B: 2 MiB
  Tensor a = Tensor::randn({m, k}).realize(), b = Tensor::randn({k, n}).realize();
  const Tensor c = a.matmul(b);
  const std::vector<engine::ExecItem> items = engine::exec_items(schedule::create_schedule({c.uop()}));
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].name, "r_16_1_1024");
  EXPECT_EQ(items[0].global_size, n / 64);
  EXPECT_TRUE(items[0].parallel);
  // A B of half the size stays in the plain order: rows of 8 outermost.
  Tensor small = Tensor::randn({k, n / 2}).realize();
  EXPECT_EQ(engine::exec_items(schedule::create_schedule({a.matmul(small).uop()}))[0].global_size, m / 8);
  expect_close(float_values(c), matmul_relu(float_values(a), float_values(b), m, k, n, false));
}

}  // namespace
}  // namespace loom
