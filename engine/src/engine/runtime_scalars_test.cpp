// Runtime scalars and view offsets (DESIGN 13, schedule/offsets.h): a number
// from outside the graph's structure and a view's start in its buffer are
// bound when a kernel launches, so a loop that changes them (a learning rate
// per step, a batch sliced out of a dataset, a row written) compiles and
// schedules its kernels once.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "engine/realize.h"
#include "loom/host.h"
#include "loom/tensor.h"

namespace loom {
namespace {

float f32(double v) { return static_cast<float>(v); }

TEST(RuntimeScalars, AThousandDistinctScalarsRunOneKernel) {
  Tensor x = Tensor::rand({256}).realize();
  const HostTensor xs = x.to_host();
  reset_run_stats();
  size_t kernels = 0;
  for (int i = 0; i < 1000; i++) {
    const double s = 0.5 + i * 1e-3 + 1e-7;  // never 0, 1 or -1 (those stay literals)
    const HostTensor y = (x * s).to_host();
    for (int64_t j = 0; j < 256; j++)
      ASSERT_EQ(y.get(j), static_cast<double>(f32(xs.get(j)) * f32(s))) << "s " << s << " element " << j;
    if (i == 0) kernels = engine::cached_kernels();
  }
  EXPECT_EQ(engine::cached_kernels(), kernels);
  EXPECT_LE(run_stats().kernels_compiled, 1);  // 0 when an earlier run left it in the disk cache
  EXPECT_EQ(run_stats().schedules, 1000);
  EXPECT_EQ(run_stats().schedule_hits, 999);
}

// The kernel reads the value from its launch arguments (v<slot>); 0, 1 and
// -1 stay literals, so x * 1 and x + 0 fold as they did.
TEST(RuntimeScalars, AScalarIsAKernelArgumentAndZeroOneMinusOneAreLiterals) {
  Tensor x = Tensor::rand({64}).realize();
  const std::vector<engine::RenderedKernel> scaled = engine::render({(x * 2.5).uop()});
  ASSERT_EQ(scaled.size(), 1u);
  EXPECT_NE(scaled[0].c_source.find("const float v0 = *(const float *)bufs[2];"), std::string::npos)
      << scaled[0].c_source;
  EXPECT_EQ(scaled[0].c_source.find("2.5"), std::string::npos) << scaled[0].c_source;
  EXPECT_NE(scaled[0].cuda_source.find(", const float v0)"), std::string::npos) << scaled[0].cuda_source;
  EXPECT_NE(scaled[0].ast.find("DEFINE_VAR"), std::string::npos) << scaled[0].ast;
  EXPECT_EQ(scaled[0].bound, "v0=2.5 float32");
  const std::vector<engine::RenderedKernel> shifted = engine::render({(x - 1).uop()});
  ASSERT_EQ(shifted.size(), 1u);
  EXPECT_EQ(shifted[0].c_source.find("v0"), std::string::npos) << shifted[0].c_source;
}

// A half tensor's scalar operand is rounded to half, then the product is
// computed in float32 and rounded once, as torch 1.13's CPU kernels do
// (x * 2.1 there equals half(float(x) * float(half(2.1))) on every element).
TEST(RuntimeScalars, AHalfTensorsScalarIsRoundedToHalfAsTorchRoundsIt) {
  Tensor x = Tensor::rand({128}, DType::Float16).realize();
  const HostTensor xs = x.to_host();
  for (double s : {2.1, -3.7, 1e-3}) {
    const HostTensor y = (x * s).to_host();
    for (int64_t j = 0; j < 128; j++) {
      const float half_s = half_bits_to_float(float_to_half_bits(f32(s)));
      const float want = half_bits_to_float(float_to_half_bits(f32(xs.get(j)) * half_s));
      ASSERT_EQ(y.get(j), static_cast<double>(want)) << "s " << s << " element " << j;
    }
  }
}

// In-place writes of one row of a matrix, a different row each time: the
// row's start moves the buffer's pointer, not the kernel.
TEST(ViewOffsets, WritingRowIOfAMatrixForAHundredRowsRunsOneKernel) {
  Tensor m = Tensor::zeros({100, 1024}).realize();
  Tensor row = Tensor::rand({1024}).realize();
  const HostTensor r = row.to_host();
  size_t kernels = 0;
  for (int i = 0; i < 100; i++) {
    m.slice(0, i, i + 1).assign(row * (i + 2.0));
    m.realize();
    if (i == 0) {
      kernels = engine::cached_kernels();
      reset_run_stats();
    }
  }
  EXPECT_EQ(engine::cached_kernels(), kernels);
  EXPECT_EQ(run_stats().kernels_compiled, 0);
  EXPECT_EQ(run_stats().schedules, 99);
  const HostTensor h = m.to_host();
  for (int i = 0; i < 100; i++)
    for (int64_t j = 0; j < 1024; j += 97)
      ASSERT_EQ(h.get(i * 1024 + j), static_cast<double>(f32(r.get(j)) * f32(i + 2.0))) << "row " << i;
}

// A batch sliced out of a dataset at a new start every step, and a flipped
// window whose lowest address is not its offset.
TEST(ViewOffsets, BatchesSlicedOutOfADatasetRunOneKernel) {
  Tensor data = Tensor::rand({40 * 32, 8}).realize();
  const HostTensor d = data.to_host();
  reset_run_stats();
  size_t kernels = 0;
  for (int i = 0; i < 40; i++) {
    const HostTensor s = data.slice(0, i * 32, (i + 1) * 32).sum({1}).to_host();
    for (int64_t b = 0; b < 32; b++) {
      float want = 0;
      for (int64_t c = 0; c < 8; c++) want += f32(d.get((i * 32 + b) * 8 + c));
      ASSERT_NEAR(s.get(b), want, 1e-5) << "batch " << i << " row " << b;
    }
    if (i == 0) kernels = engine::cached_kernels();
  }
  EXPECT_EQ(engine::cached_kernels(), kernels);
  EXPECT_EQ(run_stats().schedules, 40);
  EXPECT_EQ(run_stats().schedule_hits, 39);  // a new start is the same structure (schedule_cache.h)
  // The launch moves the dataset's pointer 8 rows of 8 in; the kernel reads from its start.
  const std::vector<engine::RenderedKernel> batch = engine::render({data.slice(0, 8, 16).sum({1}).uop()});
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_EQ(batch[0].bound, "data1+64");
  EXPECT_EQ(batch[0].ast, engine::render({data.slice(0, 0, 8).sum({1}).uop()})[0].ast);
  for (int64_t start : {0, 5, 100, 1013}) {
    const HostTensor f = data.slice(0, start, start + 7).flip({0}).mul(3.0).to_host();
    for (int64_t k = 0; k < 7 * 8; k++)
      ASSERT_EQ(f.get(k), static_cast<double>(f32(d.get((start + 6 - k / 8) * 8 + k % 8)) * 3.0f)) << start;
  }
}

// Two windows of one buffer: the schedule cache keys the distance between
// them, so windows at a new pair of starts with the same distance reuse the
// schedule and those at another distance do not, and every sum is right.
TEST(ViewOffsets, TwoWindowsOfOneBufferKeyTheirDistance) {
  Tensor x = Tensor::rand({256}).realize();
  const HostTensor xs = x.to_host();
  for (int round = 0; round < 2; round++)
    for (int64_t a : {0, 16, 40, 64, 100})
      for (int64_t d : {8, 24, 3}) {
        const HostTensor s = (x.slice(0, a, a + 8) + x.slice(0, a + d, a + d + 8)).to_host();
        for (int64_t i = 0; i < 8; i++)
          ASSERT_EQ(s.get(i), static_cast<double>(f32(xs.get(a + i)) + f32(xs.get(a + d + i))))
              << "a " << a << " d " << d << " i " << i;
      }
}

}  // namespace
}  // namespace loom
