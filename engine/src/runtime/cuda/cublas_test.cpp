// The CUDA device's extern GEMM (runtime/cuda/cublas.h): canonical GEMMs of
// every layout the schedule makes (transposed operands, padded rows, offsets,
// broadcast and non-mergeable batch axes, half operands) turned into
// cublasGemmStridedBatchedEx calls and run on the emulated cuBLAS, against
// the GEMM's definition summed in double; and libcublas's entry points
// resolved where the toolkit is installed. On a GPU, GemmSplit.* and
// HalfMatmul.* run the same calls on the real cuBLAS.
#include "runtime/cuda/cublas.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include "loom/error.h"
#include "loom/host.h"
#include "runtime/cuda/emulator.h"

namespace loom::runtime::cuda {
namespace {

using schedule::GemmOperand;
using schedule::GemmShape;

// A buffer of `n` elements of `dt` (float32 or a half type) holding values
// from `rng`, and each element's value as stored.
struct Buffer {
  std::vector<uint8_t> bytes;
  std::vector<double> values;
  Buffer(DType dt, int64_t n, std::mt19937 &rng) : bytes(static_cast<size_t>(n) * itemsize(dt)) {
    std::normal_distribution<float> dist;
    for (int64_t i = 0; i < n; i++) {
      const float v = dist(rng);
      if (dt == DType::Float32) {
        std::memcpy(bytes.data() + i * 4, &v, 4);
        values.push_back(v);
      } else {
        const uint16_t h = dt == DType::Float16 ? float_to_half_bits(v) : float_to_bf16_bits(v);
        std::memcpy(bytes.data() + i * 2, &h, 2);
        values.push_back(dt == DType::Float16 ? half_bits_to_float(h) : bf16_bits_to_float(h));
      }
    }
  }
};

double stored(const std::vector<uint8_t> &bytes, DType dt, int64_t i) {
  if (dt == DType::Float32) {
    float f;
    std::memcpy(&f, bytes.data() + i * 4, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, bytes.data() + i * 2, 2);
  return dt == DType::Float16 ? half_bits_to_float(h) : bf16_bits_to_float(h);
}

// A random rows x cols operand: row-major or its transpose, rows padded,
// offset, and batch strides that broadcast (0), follow on, or leave gaps.
GemmOperand random_operand(int64_t slot, int64_t rows, int64_t cols, const std::vector<int64_t> &batch,
                           std::mt19937 &rng, int64_t *elements) {
  auto pick = [&](int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint32_t>(n)); };
  GemmOperand o;
  o.slot = slot;
  o.offset = pick(4);
  const int64_t pad = pick(3);
  if (pick(2)) {
    o.row_stride = 1, o.col_stride = rows + pad;
  } else {
    o.row_stride = cols + pad, o.col_stride = 1;
  }
  int64_t span = (rows - 1) * o.row_stride + (cols - 1) * o.col_stride + 1;
  o.batch_strides.assign(batch.size(), 0);
  for (size_t d = batch.size(); d-- > 0;) {
    const int64_t kind = pick(3);
    if (kind == 0) continue;  // broadcast
    o.batch_strides[d] = span + (kind == 2 ? pick(5) + 1 : 0);
    span = o.batch_strides[d] * batch[d];
  }
  *elements = o.offset + span + 1;
  return o;
}

TEST(CublasGemm, CallsComputeEveryLayoutsGemmOnTheEmulatedCublas) {
  std::mt19937 rng(20261125);
  auto pick = [&](int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint32_t>(n)); };
  const CublasApi &api = emulated_cublas();
  void *handle = nullptr;
  ASSERT_EQ(api.create(&handle), 0);
  int calls_looped = 0, batched = 0;
  for (int trial = 0; trial < 300; trial++) {
    GemmShape g;
    g.in = std::vector<DType>{DType::Float32, DType::Float16, DType::BFloat16}[static_cast<size_t>(pick(3))];
    g.out = g.in == DType::Float32 || pick(2) ? g.in : DType::Float32;
    for (int64_t d = pick(3); d > 0; d--) g.batch.push_back(pick(3) + 1);
    g.m = pick(9) + 1, g.n = pick(9) + 1, g.k = pick(9) + 1;
    int64_t a_elems = 0, b_elems = 0;
    g.a = random_operand(1 + pick(2), g.m, g.k, g.batch, rng, &a_elems);
    g.b = random_operand(3 - g.a.slot, g.k, g.n, g.batch, rng, &b_elems);
    const std::optional<CublasGemm> plan = cublas_gemm(g);
    ASSERT_TRUE(plan) << "trial " << trial;
    calls_looped += !plan->outer.empty();
    batched += plan->batch > 1;

    int64_t batches = 1;
    for (int64_t n : g.batch) batches *= n;
    const Buffer a(g.in, a_elems, rng), b(g.in, b_elems, rng);
    std::vector<uint8_t> c(static_cast<size_t>(batches * g.m * g.n) * itemsize(g.out), 0xff);
    void *bufs[3] = {c.data(), nullptr, nullptr};
    bufs[g.a.slot] = const_cast<uint8_t *>(a.bytes.data());
    bufs[g.b.slot] = const_cast<uint8_t *>(b.bytes.data());
    cublas_program(*plan, api, handle)->launch(bufs, 0, false);

    const double eps = g.out == DType::Float32 ? 1e-6 : g.out == DType::Float16 ? 1e-3 : 8e-3;
    for (int64_t p = 0; p < batches; p++) {
      int64_t oa = g.a.offset, ob = g.b.offset;
      for (size_t d = g.batch.size(), rest = static_cast<size_t>(p); d-- > 0;) {
        const auto x = static_cast<int64_t>(rest % static_cast<size_t>(g.batch[d]));
        oa += x * g.a.batch_strides[d], ob += x * g.b.batch_strides[d];
        rest /= static_cast<size_t>(g.batch[d]);
      }
      for (int64_t x = 0; x < g.m; x++)
        for (int64_t y = 0; y < g.n; y++) {
          double want = 0, mag = 0;
          for (int64_t q = 0; q < g.k; q++) {
            const double t = a.values[static_cast<size_t>(oa + x * g.a.row_stride + q * g.a.col_stride)] *
                             b.values[static_cast<size_t>(ob + q * g.b.row_stride + y * g.b.col_stride)];
            want += t, mag += std::abs(t);
          }
          const double got = stored(c, g.out, (p * g.m + x) * g.n + y);
          ASSERT_NEAR(got, want, eps * (mag + 1)) << "trial " << trial << " at " << p << ", " << x << ", " << y;
        }
    }
  }
  EXPECT_GT(calls_looped, 10);  // the cases reach both ways of covering the batch
  EXPECT_GT(batched, 50);
}

TEST(CublasGemm, OperandsCublasCannotReadStayGeneratedCode) {
  GemmShape g;
  g.m = 4, g.n = 5, g.k = 6;
  g.a = {1, 0, {}, 6, 1, nullptr};
  g.b = {2, 0, {}, 5, 1, nullptr};
  ASSERT_TRUE(cublas_gemm(g));
  GemmShape strided = g;
  strided.a.col_stride = 2;  // neither rows nor columns unit-stride
  EXPECT_FALSE(cublas_gemm(strided));
  GemmShape reversed = g;
  reversed.b.row_stride = -5;
  EXPECT_FALSE(cublas_gemm(reversed));
  GemmShape narrow = g;
  narrow.a.row_stride = 3;  // rows overlap: under the width
  EXPECT_FALSE(cublas_gemm(narrow));
}

TEST(CublasGemm, AFailingCallIsAnErrorNamingCublasStatus) {
  const CublasApi &api = emulated_cublas();
  void *handle = nullptr;
  ASSERT_EQ(api.create(&handle), 0);
  CublasGemm plan;
  plan.m = 4, plan.n = 4, plan.k = 4, plan.lda = 2, plan.ldb = 4, plan.ldc = 4;  // lda under m
  std::vector<float> a(16), b(16), c(16);
  void *bufs[3] = {c.data(), a.data(), b.data()};
  plan.a_slot = 1, plan.b_slot = 2;
  try {
    cublas_program(plan, api, handle)->launch(bufs, 0, false);
    FAIL() << "an invalid leading dimension ran";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("CUBLAS_STATUS_INVALID_VALUE"), std::string::npos) << e.what();
  }
}

TEST(CublasGemm, LibcublasHasEveryEntryPointLoomCalls) {
  if (!std::filesystem::exists("/usr/local/cuda/lib64/libcublas.so") && !cublas())
    GTEST_SKIP() << cublas_missing();
  EXPECT_EQ(cublas_missing(), "");
  ASSERT_NE(cublas(), nullptr);
  EXPECT_NE(cublas()->gemm, nullptr);
}

}  // namespace
}  // namespace loom::runtime::cuda
