// The CUDA target's launch shapes, and NVRTC on its kernels (skipped where
// NVRTC is absent). What the kernels compute is checked by running the
// engine's tests on LOOM_DEVICE=CUDA_EMULATOR (ctest's engine.CudaEmulator).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine/realize.h"
#include "engine/testing/extern_gemm.h"
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
