// The execution layer: the kernel cache (one program per distinct kernel,
// unusable disk entries rebuilt, processes sharing a cache), memory that
// stays flat over a training loop, and executed work against the graph's need.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include "engine/realize.h"
#include "engine/testing/extern_gemm.h"
#include "engine/testing/values.h"
#include "loom/autograd.h"
#include "loom/nn.h"
#include "uop/uop.h"

extern char **environ;

namespace loom {
namespace {

namespace fs = std::filesystem;
using testing::no_opt;

// A constant no earlier run used, so the kernel is new to the disk cache too.
double fresh_constant() {
  static int n = 0;
  const auto t = std::chrono::steady_clock::now().time_since_epoch().count();
  return 1 + static_cast<double>((t % 1000003) * 7 + getpid() % 1000 + ++n) * 1e-9;
}

// Realizes and checks x * c + 2; returns the file its one kernel is cached in.
std::string realize_kernel(double c) {
  Tensor x = Tensor::arange(16, DType::Float64).realize();
  Tensor y = x * testing::literal(c) + 2.0;
  const std::vector<std::string> files = engine::cache_files({y.uop()});
  EXPECT_EQ(files.size(), 1u);
  HostTensor h = y.to_host();
  for (int64_t i = 0; i < 16; ++i) EXPECT_DOUBLE_EQ(h.get(i), static_cast<double>(i) * c + 2.0);
  return files.empty() ? "" : files[0];
}

void expect_rebuilt_after(const std::function<void(const std::string &)> &damage) {
  const double c = fresh_constant();
  const std::string so = realize_kernel(c);
  ASSERT_TRUE(fs::exists(so)) << so;
  engine::clear_kernel_cache();  // unloads it; the next realize looks on disk, as a new process would
  damage(so);
  reset_run_stats();
  EXPECT_EQ(realize_kernel(c), so);
  EXPECT_EQ(run_stats().cache_healed, 1);
  EXPECT_EQ(run_stats().kernels_compiled, 1);
  EXPECT_TRUE(fs::exists(so));
}

// A long-running process that meets many distinct kernels keeps only the
// most recently used loaded (each holds a shared object's mappings); an
// unloaded one comes back from the disk cache without compiling.
// Copies between the host and the device are counted: an upload per
// from_host, a read per item() or to_host(), none inside a realize.
TEST(RunStats, CountsCopiesBetweenTheHostAndTheDevice) {
  reset_run_stats();
  const Tensor x = Tensor::from_vector({1, 2, 3}, {3});
  EXPECT_EQ(run_stats().host_writes, 1);
  EXPECT_EQ(run_stats().host_write_bytes, 12);
  const Tensor y = x.mul(2).sum({0}).realize();
  EXPECT_EQ(run_stats().host_reads, 0);
  EXPECT_EQ(y.item(), 12);
  EXPECT_EQ(run_stats().host_reads, 1);
  EXPECT_EQ(run_stats().host_read_bytes, 4);
  x.to_host();
  EXPECT_EQ(run_stats().host_reads, 2);
  EXPECT_EQ(run_stats().host_read_bytes, 16);
  EXPECT_EQ(run_stats().host_writes, 1);
  // An index check reads the indices on the host (in place on the CPU: the
  // same count, as on a GPU).
  const Tensor idx = Tensor::from_vector({2, 0}, {2}, DType::Int64);
  reset_run_stats();
  x.index_select(0, idx);
  EXPECT_EQ(run_stats().host_reads, 1);
  EXPECT_EQ(run_stats().host_read_bytes, 16);
}

TEST(KernelCache, KeepsAtMostItsLimitLoadedAndReloadsEvictedKernelsFromDisk) {
  const size_t before = engine::set_kernel_cache_limit(4);
  std::vector<double> constants;
  for (int i = 0; i < 12; ++i) {
    constants.push_back(fresh_constant());
    realize_kernel(constants.back());
    EXPECT_LE(engine::cached_kernels(), 4u) << "after kernel " << i;
  }
  reset_run_stats();
  realize_kernel(constants[0]);  // evicted long ago
  EXPECT_EQ(run_stats().kernels_compiled, 0);
  engine::set_kernel_cache_limit(before);
}

TEST(KernelCache, TruncatedEntryIsDeletedAndRebuilt) {
  expect_rebuilt_after([](const std::string &so) { fs::resize_file(so, fs::file_size(so) / 3); });
}

TEST(KernelCache, GarbageEntryIsDeletedAndRebuilt) {
  expect_rebuilt_after([](const std::string &so) {
    std::ofstream(so, std::ios::trunc) << "not a shared object";
  });
}

// A valid shared object under the wrong name (another compiler's, or another
// kernel's): its embedded key differs, so it is not used.
TEST(KernelCache, ForeignEntryIsDeletedAndRebuilt) {
  const std::string other = realize_kernel(fresh_constant());
  ASSERT_TRUE(fs::exists(other));
  expect_rebuilt_after([&](const std::string &so) { fs::copy_file(other, so, fs::copy_options::overwrite_existing); });
}

TEST(KernelCache, IdenticalKernelsCompileOncePerProcess) {
  const double c = fresh_constant();
  const std::vector<double> values{0, 1, 2, 3, 4, 5, 6, 7};
  Tensor x = Tensor::from_vector(values, {8}).realize();
  Tensor y = Tensor::from_vector(values, {8}).realize();  // another buffer
  reset_run_stats();
  const size_t before = engine::cached_kernels();
  (x * testing::literal(c)).realize();
  (y * testing::literal(c)).realize();  // another schedule, same kernel
  EXPECT_EQ(run_stats().kernels_compiled, 1);
  EXPECT_EQ(engine::cached_kernels(), before + 1);
}

int spawn_child(const std::string &cache) {
  std::vector<std::string> env_strings{"LOOM_CACHE_DIR=" + cache};
  for (char **e = environ; *e; ++e)
    if (std::string(*e).rfind("LOOM_CACHE_DIR=", 0) != 0) env_strings.push_back(*e);
  std::vector<char *> envp;
  for (auto &s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  char *argv[] = {const_cast<char *>(LOOM_CACHE_CHILD), nullptr};
  pid_t pid;
  EXPECT_EQ(posix_spawn(&pid, LOOM_CACHE_CHILD, nullptr, nullptr, argv, envp.data()), 0);
  return pid;
}

TEST(KernelCache, ConcurrentProcessesFillOneCache) {
  const fs::path cache = fs::temp_directory_path() / ("loom-cache-race-" + std::to_string(getpid()));
  fs::remove_all(cache);
  std::vector<pid_t> pids;
  for (int i = 0; i < 3; ++i) pids.push_back(spawn_child(cache.string()));
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  int objects = 0, leftovers = 0;
  for (auto &e : fs::directory_iterator(cache)) {  // shared objects (the CPU, the emulator) or cubins (a GPU)
    const fs::path ext = e.path().extension();
    (ext == ".so" || ext == ".cubin" ? objects : leftovers)++;
  }
  EXPECT_GE(objects, 12);  // the children's kernels, each once
  EXPECT_EQ(leftovers, 0);  // no temporaries left behind
  fs::remove_all(cache);
}

// forward, backward, an SGD update with assign and a BatchNorm running-stat
// update, 1000 times: after warm-up, the live buffers and bytes are the same
// at the end of every iteration, and no kernel is compiled or cached anew.
TEST(Memory, TrainingLoopKeepsLiveBuffersFlat) {
  Tensor::manual_seed(3);
  Tensor x = Tensor::randn({16, 32}).realize();
  Tensor w = Tensor::randn({32, 32}).mul(0.1).realize().requires_grad_();
  Tensor rm = Tensor::zeros({32}).realize(), rv = Tensor::ones({32}).realize();
  MemoryStats warm;
  size_t kernels = 0;
  for (int it = 0; it < 1000; ++it) {
    Tensor h = nn::batch_norm(x.matmul(w).relu(), rm, rv, std::nullopt, std::nullopt, true, 0.1, 1e-5);
    Tensor loss = h.mul(h).sum();
    Tensor g = autograd::grad({loss}, {w})[0];
    {
      autograd::NoGradGuard no_grad;
      w.assign(w.sub(g.mul(1e-3)));
    }
    std::vector<Tensor> state{w, rm, rv};
    realize_all(state);
    if (it == 20) {
      warm = memory_stats();
      kernels = engine::cached_kernels();
      reset_run_stats();
    }
    if (it > 20) {
      const MemoryStats now = memory_stats();
      ASSERT_EQ(now.live_buffers, warm.live_buffers) << "iteration " << it;
      ASSERT_EQ(now.live_bytes, warm.live_bytes) << "iteration " << it;
    }
  }
  EXPECT_EQ(run_stats().kernels_compiled, 0);
  EXPECT_EQ(engine::cached_kernels(), kernels);
  EXPECT_TRUE(std::isfinite(rm.to_host().get(0)));
}

// A chain of matmuls realized at once: each product gets a buffer (a matmul
// reads its operand through an expanding view), and one no one holds is freed
// after its last reader, so the peak is a few products, not the chain's
// length. A product the caller holds keeps its buffer: realizing it later
// runs nothing.
TEST(Memory, AnIntermediateIsFreedAfterItsLastReaderUnlessHeld) {
  Tensor::manual_seed(4);
  constexpr int64_t n = 128, steps = 24;
  constexpr int64_t bytes = n * n * 4;
  Tensor x = Tensor::randn({n, n}).realize();
  Tensor w = Tensor::randn({n, n}).mul(1.0 / std::sqrt(static_cast<double>(n))).realize();
  Tensor y = x, held;
  for (int64_t i = 0; i < steps; ++i) {
    y = y.matmul(w).tanh();
    if (i == steps / 2) held = y;
  }
  Tensor out = y.sum();
  reset_peak_memory();
  const MemoryStats before = memory_stats();
  const double got = out.item();
  const MemoryStats after = memory_stats();
  EXPECT_LE(after.peak_bytes - before.live_bytes, 4 * bytes);  // was steps * bytes before buffers were freed
  EXPECT_LE(after.live_bytes - before.live_bytes, 2 * bytes + 4);  // `held`, `y` and the scalar
  reset_run_stats();
  held.realize();
  EXPECT_EQ(run_stats().kernels_run, 0);
  // The same values as realizing every step on its own.
  Tensor z = x;
  for (int64_t i = 0; i < steps; ++i) z = z.matmul(w).tanh().realize();
  EXPECT_DOUBLE_EQ(got, z.sum().item());
}

// conv -> BatchNorm (training) -> GELU -> max-pool, forward and backward: the
// kernels execute at most 1.5x the ALU work the graph needs with every op
// computed once (RunStats::work against RunStats::work_needed).
TEST(Work, ConvBatchNormGeluPoolComputesEachReductionOnce) {
  Tensor::manual_seed(5);
  Tensor x = Tensor::randn({4, 8, 12, 12}).realize();
  Tensor w = Tensor::randn({16, 8, 3, 3}).mul(0.2).realize().requires_grad_();
  Tensor gamma = Tensor::ones({16}).realize().requires_grad_(), beta = Tensor::zeros({16}).realize().requires_grad_();
  Tensor rm = Tensor::zeros({16}).realize(), rv = Tensor::ones({16}).realize();
  reset_run_stats();
  Tensor h = nn::conv2d(x, w, std::nullopt, 1, 1);
  h = nn::batch_norm(h, rm, rv, gamma, beta, true, 0.1, 1e-5).gelu();
  h = nn::max_pool2d(h, 2);
  Tensor loss = h.mul(h).mean();
  loss.realize();
  const RunStats fwd = run_stats();
  EXPECT_LE(fwd.work, fwd.work_needed * 3 / 2);
  reset_run_stats();
  std::vector<Tensor> grads = autograd::grad({loss}, {w, gamma, beta});
  realize_all(grads);
  const RunStats bwd = run_stats();
  EXPECT_GT(bwd.work_needed, 2 * 4 * 16 * 12 * 12 * 8 * 9);  // at least the two conv-sized reductions
  EXPECT_LE(bwd.work, bwd.work_needed * 3 / 2);
}

// A max-pool's forward: the windows' maximum, each window's best score (the
// element torch's scan keeps: one float per window, which the gradient reads
// too) and the value of that element. Three kernels, one stored intermediate
// beside the maximum: no mask per window element.
TEST(Work, AMaxPoolStoresOneScorePerWindow) {
  Tensor::manual_seed(7);
  Tensor x = Tensor::randn({2, 4, 9, 9}).realize().requires_grad_();
  reset_run_stats();
  Tensor y = nn::max_pool2d(x, 2);
  y.realize();
  EXPECT_EQ(run_stats().kernels_run, 3);
  EXPECT_EQ(run_stats().buffers_allocated, 3);
}

// A 3x3 convolution's input gradient at stride 2, padding 1 and `dilation`,
// of a 7 x 5 image, against plain loops in double (its output gradient all
// ones); and the nodes above its sums (not descending into a stored node or
// a reduction): `want` of them, and `sums` reductions below them.
void check_strided_input_gradient(int64_t dilation, const std::map<uop::Op, int> &want, int sums) {
  Tensor::manual_seed(6);
  Tensor x = Tensor::randn({2, 3, 7, 5}).realize().requires_grad_();
  Tensor w = Tensor::randn({4, 3, 3, 3}).realize();
  Tensor gx = autograd::grad({nn::conv2d(x, w, std::nullopt, 2, 1, dilation).sum()}, {x})[0];
  const uop::UOpRef &top = gx.uop()->op == uop::Op::Contiguous ? gx.uop()->src[0] : gx.uop();
  std::map<uop::Op, int> above;
  int reductions = 0;
  std::vector<uop::UOpRef> todo{top};
  std::set<const uop::UOp *> seen;
  while (!todo.empty()) {
    uop::UOpRef u = todo.back();
    todo.pop_back();
    if (u->op == uop::Op::Contiguous || !seen.insert(u.get()).second) continue;
    if (u->op == uop::Op::ReduceAxis) {
      reductions++;
      continue;
    }
    above[u->op]++;
    for (const uop::UOpRef &s : u->src) todo.push_back(s);
  }
  EXPECT_EQ(above, want);
  EXPECT_EQ(reductions, sums);
  const HostTensor got = gx.to_host(), hw = w.to_host();
  const int64_t oh = (7 + 2 - 2 * dilation - 1) / 2 + 1, ow = (5 + 2 - 2 * dilation - 1) / 2 + 1;
  std::vector<double> want_gx(2 * 3 * 7 * 5, 0.0);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t o = 0; o < 4; ++o)
        for (int64_t i = 0; i < oh; ++i)
          for (int64_t j = 0; j < ow; ++j)
            for (int64_t a = 0; a < 3; ++a)
              for (int64_t b = 0; b < 3; ++b) {
                const int64_t p = i * 2 + a * dilation - 1, q = j * 2 + b * dilation - 1;
                if (p >= 0 && p < 7 && q >= 0 && q < 5)
                  want_gx[static_cast<size_t>(((n * 3 + c) * 7 + p) * 5 + q)] += hw.get(((o * 3 + c) * 3 + a) * 3 + b);
              }
  for (int64_t e = 0; e < got.numel(); ++e) EXPECT_NEAR(got.get(e), want_gx[static_cast<size_t>(e)], 1e-4) << e;
}

// A strided 3x3 convolution's input gradient is one convolution of the
// output gradient per phase of the input (the pixels of one parity in each
// dim, which read the taps of that parity: 4, 2, 2 and 1), placed every
// other pixel and added: four views and three adds above the four sums, no
// windows' gradient (9/4 of the input) stored. (At stride 1 the input
// gradient is one convolution: gemm_test.cpp.)
TEST(Work, AStridedConvolutionsInputGradientIsOneConvolutionPerPhase) {
  check_strided_input_gradient(1, {{uop::Op::View, 4}, {uop::Op::Add, 3}}, 4);
}

// Dilated, the phases would be uneven: the input gradient adds each window
// element's gradient back where it was read, one elementwise sum of nine
// shifted views of the stored windows' gradient, nothing else above it (no
// per-element tensor ops: each was graph nodes to schedule every step).
TEST(Work, AStridedDilatedConvolutionsInputGradientIsNineViewsOfItsWindowsGradientAdded) {
  check_strided_input_gradient(2, {{uop::Op::View, 9}, {uop::Op::Add, 8}}, 0);
}

// Indexing is addressing: an index_select by a permutation is one kernel of
// indexed loads, no ALU work per (output, candidate) pair as a one-hot select
// would do (that was O(rows^2 * cols)).
TEST(Work, IndexSelectIsOneIndexedLoadPerElement) {
  Tensor::manual_seed(9);
  Tensor x = Tensor::randn({300, 64}).realize();
  Tensor perm = Tensor::randperm(300).realize();
  reset_run_stats();
  HostTensor got = x.index_select(0, perm).to_host();
  EXPECT_EQ(run_stats().kernels_run, 1);
  EXPECT_LE(run_stats().work, 300 * 64);
  const HostTensor hx = x.to_host(), hp = perm.to_host();
  for (int64_t i = 0; i < 300; ++i)
    for (int64_t j = 0; j < 64; j += 9)
      ASSERT_EQ(got.get(i * 64 + j), hx.get(static_cast<int64_t>(hp.get(i)) * 64 + j)) << i << ", " << j;
}

size_t count_of(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) n++;
  return n;
}

// Accumulators a kernel declares, counting a vector of n lanes as n.
size_t count_accumulators(const Tensor &t) {
  const std::vector<engine::RenderedKernel> ks = engine::render({t.uop()});
  EXPECT_EQ(ks.size(), 1u);
  size_t accs = 0;
  for (const char *type : {"float acc", "double acc", "_t acc", "_Bool acc"}) accs += count_of(ks[0].c_source, type);
  for (int w : {4, 8, 16}) accs += count_of(ks[0].c_source, "loom_v" + std::to_string(w) + "f acc") * static_cast<size_t>(w);
  return accs;
}

// A kernel with one reduction computes a tile of outputs per iteration, one
// accumulator each over a shared loop nest (LOOM_NOOPT=1: one): eight elements
// of the innermost output axis, and eight of another axis along which a load
// is reused (a matmul's 8x8 tile: A's element serves a row of the tile, B's a
// column; the vectorize pass makes each row of the tile one vector of eight
// lanes). Each element still sums in the same order, so the values are the
// plain loop's, bit for bit (each product folded as the target folds it).
TEST(Codegen, AReductionComputesATileOfOutputsOverOneLoopNest) {
  testing::ExternGemm generated(false);  // generated code, not OpenBLAS's own summation order
  Tensor::manual_seed(11);
  Tensor a = Tensor::randn({16, 12}).realize(), b = Tensor::randn({12, 16}).realize();
  Tensor c = a.matmul(b);
  EXPECT_EQ(count_accumulators(c), no_opt() ? 1u : 64u);
  const HostTensor ha = a.to_host(), hb = b.to_host(), hc = c.to_host();
  const bool fused = testing::fused_multiply_add();
  for (int64_t i = 0; i < 16; ++i)
    for (int64_t j = 0; j < 16; ++j) {
      float acc = 0;
      for (int64_t k = 0; k < 12; ++k)
        acc = testing::add_product(acc, static_cast<float>(ha.get(i * 12 + k)), static_cast<float>(hb.get(k * 16 + j)),
                                   fused);
      ASSERT_EQ(static_cast<float>(hc.get(i * 16 + j)), acc) << i << ", " << j;
    }
}

// Along an axis every load depends on, a second upcast would reuse nothing:
// a row sum of a (16, 16, 12) tensor gets the eight accumulators of its
// innermost output axis only. A sum over the outer axis of (16, 64), whose
// output has no other axis, runs 64 columns (eight vectors) per iteration; a
// sum over the inner axis of (64, 16) stays at 8 rows (64 would stream 64 rows).
TEST(Codegen, ATileGrowsOnlyAlongAnAxisWithReusedLoads) {
  Tensor::manual_seed(12);
  Tensor x = Tensor::randn({16, 16, 12}).realize();
  EXPECT_EQ(count_accumulators(x.sum({2})), no_opt() ? 1u : 8u);
  Tensor y = Tensor::randn({16, 64}).realize();
  Tensor col = y.sum({0});
  EXPECT_EQ(count_accumulators(col), no_opt() ? 1u : 64u);
  EXPECT_EQ(count_accumulators(Tensor::randn({64, 16}).realize().sum({1})), no_opt() ? 1u : 8u);
  const HostTensor hy = y.to_host(), hc = col.to_host();
  for (int64_t j = 0; j < 64; ++j) {
    float acc = 0;
    for (int64_t i = 0; i < 16; ++i) acc = acc + static_cast<float>(hy.get(i * 64 + j));
    ASSERT_EQ(static_cast<float>(hc.get(j)), acc) << j;
  }
}

// A float sum of 2^20 equal terms (the worst case for rounding: every error
// has the same sign) adds partial sums of its inner 1024 terms: within 5e-5
// of the exact sum (1.4e-5 here), where one running float sum is 1% off. The
// same holds for a sum over two axes and for a row sum under the upcast tile,
// whose rows split their one long axis.
TEST(Codegen, ALongFloatSumAddsPartialSumsOfItsInnerLoops) {
  const int64_t n = int64_t{1} << 20;
  HostTensor h = HostTensor::contiguous(DType::Float32, {n});
  for (int64_t i = 0; i < n; ++i) h.set(i, 0.1f);
  const double exact = static_cast<double>(n) * static_cast<double>(0.1f);
  float running = 0;
  for (int64_t i = 0; i < n; ++i) running += 0.1f;
  ASSERT_GT(std::abs(running - exact) / exact, 5e-3);  // what a one-level sum gives
  const Tensor x = Tensor::from_host(h).realize();
  // Two accumulators in one kernel below split_reductions' length (longer
  // sums fold chunks into partials first: split_reduce_test.cpp), each of the
  // C target's 8 interleaved lanes (sum_lanes_test.cpp) where it optimizes.
  EXPECT_EQ(count_accumulators(x.slice(0, 0, 16384).sum({0})), no_opt() ? 2u : 16u);
  EXPECT_NEAR(x.sum({0}).item(), exact, exact * 5e-5);
  EXPECT_NEAR(x.reshape({256, 4096}).sum({0, 1}).item(), exact, exact * 5e-5);
  const HostTensor rows = x.reshape({64, 16384}).sum({1}).to_host();
  for (int64_t i = 0; i < 64; ++i) ASSERT_NEAR(rows.get(i), exact / 64, exact / 64 * 5e-5) << i;
}

// exp on float runs the C prelude's branch-free polynomial (so an unrolled
// group vectorizes). Across the whole range, subnormal results, overflow and
// the special values, it stays within one float ulp of the exact result.
// On a GPU it is CUDA's expf, as PyTorch's CUDA exp is: the CUDA Math API
// bounds that by two ulps.
TEST(Codegen, FloatExpIsWithinOneUlpOfTheExactValue) {
  const int ulps = std::string(engine::device_name()) == "CUDA" ? 2 : 1;
  const int64_t n = int64_t{1} << 20;
  const std::vector<float> special{0.0f, -0.0f, INFINITY, -INFINITY, NAN, 88.72283f, 88.72284f, -87.33655f,
                                   -103.9720f, -103.9730f, 1e-30f, -1e-30f, 0.34657359f, -0.34657359f, 700.0f, -700.0f};
  HostTensor h = HostTensor::contiguous(DType::Float32, {n + 16});
  for (int64_t i = 0; i < n; ++i) h.set(i, -110.0 + 200.0 * static_cast<double>(i) / static_cast<double>(n));
  for (size_t i = 0; i < special.size(); ++i) h.set(n + static_cast<int64_t>(i), special[i]);
  const HostTensor got = Tensor::from_host(h).exp().to_host();
  for (int64_t i = 0; i < n + 16; ++i) {
    const float x = static_cast<float>(h.get(i)), g = static_cast<float>(got.get(i));
    const double exact = std::exp(static_cast<double>(x));
    if (std::isnan(x)) {
      ASSERT_TRUE(std::isnan(g)) << "exp(nan)";
      continue;
    }
    float lo = static_cast<float>(exact), hi = lo;
    for (int u = 0; u < ulps; ++u) lo = std::nextafter(lo, -INFINITY), hi = std::nextafter(hi, INFINITY);
    ASSERT_TRUE(g >= lo && g <= hi) << "exp(" << x << ") = " << g << ", exact " << exact;
  }
}

// log and tanh on float run the prelude's branch-free polynomials (so they
// vectorize): log within one ulp of the exact result over the finite
// positives (subnormals included), tanh within two over the whole line; the
// special values as libm's.
TEST(Codegen, FloatLogAndTanhStayWithinAFewUlpOfTheExactValue) {
  const std::vector<float> special{0.0f, -0.0f, INFINITY, -INFINITY, NAN, -1.0f, 1.0f, 1e-45f, 1.1754942e-38f,
                                   0.625f, -0.625f, 9.0f, -9.0f, 3.4028235e38f, 0.70710677f, 1.4142135f};
  std::vector<float> xs;
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 4099) {
    float x;
    const auto bits = static_cast<uint32_t>(u);
    std::memcpy(&x, &bits, 4);
    xs.push_back(x);
  }
  xs.insert(xs.end(), special.begin(), special.end());
  HostTensor h = HostTensor::contiguous(DType::Float32, {static_cast<int64_t>(xs.size())});
  for (size_t i = 0; i < xs.size(); ++i) h.set(static_cast<int64_t>(i), xs[i]);
  const Tensor t = Tensor::from_host(h);
  const HostTensor lg = t.log().to_host(), th = t.tanh().to_host();
  auto within = [](float got, double exact, int ulps) {
    if (std::isnan(exact)) return std::isnan(got);
    if (std::isinf(exact)) return static_cast<double>(got) == exact;
    float lo = static_cast<float>(exact), hi = lo;
    for (int k = 0; k < ulps; ++k) {
      lo = std::nextafter(lo, -INFINITY);
      hi = std::nextafter(hi, INFINITY);
    }
    return got >= lo && got <= hi;
  };
  for (size_t i = 0; i < xs.size(); ++i) {
    const float x = xs[i];
    const auto at = static_cast<int64_t>(i);
    ASSERT_TRUE(within(static_cast<float>(lg.get(at)), std::log(static_cast<double>(x)), 1))
        << "log(" << x << ") = " << lg.get(at);
    ASSERT_TRUE(within(static_cast<float>(th.get(at)), std::tanh(static_cast<double>(x)), 2))
        << "tanh(" << x << ") = " << th.get(at);
  }
}

}  // namespace
}  // namespace loom
