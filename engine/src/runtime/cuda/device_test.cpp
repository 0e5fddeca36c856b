// The CUDA device: without a driver or GPU it is a clear error and the CPU
// device is untouched; with a GPU, buffers round-trip, a hand-written kernel
// compiles (through the disk cache, healing a corrupt entry) and runs, and
// freed blocks are reused. The GPU tests skip, saying why, on machines
// without one.
#include "runtime/cuda/cuda.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "knobs/knobs.h"
#include "loom/error.h"
#include "runtime/cuda/driver.h"

namespace loom::runtime::cuda {
namespace {

// The CUDA device, or nullptr with the reason it cannot be used.
Device *gpu_device(std::string *why) {
  try {
    return &device();
  } catch (const Error &e) {
    *why = e.what();
    return nullptr;
  }
}

TEST(CudaDevice, MissingDriverIsAClearError) {
  const std::string &why = driver_missing();
  if (why.empty()) GTEST_SKIP() << "the driver and a GPU are present";
  EXPECT_EQ(why.rfind("CUDA: ", 0), 0u) << why;
  try {
    device();
    FAIL() << "device() returned without a driver";
  } catch (const Error &e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("CUDA"), std::string::npos) << msg;
    EXPECT_NE(msg.find(why), std::string::npos) << msg;
  }
  EXPECT_THROW(device(), Error);  // asked again, the same error, no crash
}

TEST(CudaDevice, CpuDeviceWorksWhateverCudaDoes) {
  if (knobs::device() != "CPU") GTEST_SKIP() << "LOOM_DEVICE=" << knobs::device();
  (void)driver_missing();  // probing CUDA first changes nothing for the CPU
  Device &cpu = default_device();
  EXPECT_STREQ(cpu.name(), "CPU");
  const std::vector<int> in{1, 2, 3, 4};
  std::vector<int> out(4);
  auto buf = cpu.allocate(sizeof(int) * 4);
  cpu.copy_in(buf.get(), in.data(), sizeof(int) * 4);
  cpu.copy_out(out.data(), buf.get(), sizeof(int) * 4);
  EXPECT_EQ(out, in);
}

TEST(CudaDevice, BytesRoundTrip) {
  std::string why;
  Device *d = gpu_device(&why);
  if (!d) GTEST_SKIP() << "no GPU: " << why;
  EXPECT_STREQ(d->name(), "CUDA");
  EXPECT_FALSE(d->host_addressable());
  std::string in(1000, '\0');
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<char>(i * 7 + 1);
  auto a = d->allocate(in.size()), b = d->allocate(in.size());
  d->copy_in(a.get(), in.data(), in.size());
  d->copy(b.get(), a.get(), in.size());
  std::string out(in.size(), '\0');
  d->copy_out(out.data(), b.get(), out.size());
  EXPECT_EQ(out, in);
  auto z1 = d->allocate(0), z2 = d->allocate(0);  // empty buffers are still distinct
  EXPECT_NE(z1.get(), nullptr);
  EXPECT_NE(z1.get(), z2.get());
}

TEST(CudaDevice, AllocatorReusesAFreedBlock) {
  std::string why;
  Device *d = gpu_device(&why);
  if (!d) GTEST_SKIP() << "no GPU: " << why;
  void *first = d->allocate(12345).get();  // freed at once, back to the cache
  auto again = d->allocate(12345);
  EXPECT_EQ(again.get(), first);
  auto other = d->allocate(12345);  // the cached block is taken: a new one
  EXPECT_NE(other.get(), first);
}

const char *kDouble = R"(extern "C" __global__ void loom_test_double(float *data0, const float *data1) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 1000) data0[i] = 2.0f * data1[i];
}
)";

TEST(CudaDevice, CompilesCachesAndRunsAKernel) {
  std::string why;
  Device *d = gpu_device(&why);
  if (!d) GTEST_SKIP() << "no GPU: " << why;
  const KernelSource k{.name = "loom_test_double", .source = kDouble, .blocks = 0, .threads = 128, .buffers = 2};
  CompileStats first;
  auto programs = d->compile({k}, first);
  ASSERT_EQ(programs.size(), 1u);
  CompileStats hit;
  d->compile({k}, hit);
  EXPECT_EQ(hit.compiled, 0);
  {  // a truncated cache entry is deleted and rebuilt
    std::ofstream f(d->cache_file(k), std::ios::binary | std::ios::trunc);
    f << "not a cubin";
  }
  CompileStats healed;
  programs = d->compile({k}, healed);
  EXPECT_EQ(healed.cache_healed, 1);
  EXPECT_EQ(healed.compiled, 1);

  std::vector<float> in(1000), out(1000);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i) - 500.5f;
  const size_t bytes = in.size() * sizeof(float);
  auto src = d->allocate(bytes), dst = d->allocate(bytes);
  d->copy_in(src.get(), in.data(), bytes);
  void *bufs[] = {dst.get(), src.get()};
  programs[0]->launch(bufs, 1000, true);  // ceil(1000 / 128) blocks
  synchronize();
  d->copy_out(out.data(), dst.get(), bytes);
  for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(out[i], 2 * in[i]) << "at " << i;
}

// A kernel whose parameters are not the buffers and scalars its launch
// passes is refused when it loads, not launched with a short parameter array.
TEST(CudaDevice, AKernelTakingOtherParametersThanItsLaunchPassesIsAnInternalError) {
  std::string why;
  Device *d = gpu_device(&why);
  if (!d) GTEST_SKIP() << "no GPU: " << why;
  if (!driver().FuncGetParamInfo) GTEST_SKIP() << "the driver predates cuFuncGetParamInfo";
  for (size_t buffers : {size_t{0}, size_t{1}, size_t{3}}) {
    const KernelSource k{.name = "loom_test_double", .source = kDouble, .blocks = 0, .threads = 128, .buffers = buffers};
    CompileStats stats;
    try {
      d->compile({k}, stats);
      FAIL() << "a kernel of 2 parameters loaded for a launch of " << buffers;
    } catch (const InternalError &e) {
      EXPECT_NE(std::string(e.what()).find("does not take the " + std::to_string(buffers) + " parameters"),
                std::string::npos) << e.what();
    }
  }
}

TEST(CudaDevice, AKernelThatDoesNotCompileIsAnInternalError) {
  std::string why;
  Device *d = gpu_device(&why);
  if (!d) GTEST_SKIP() << "no GPU: " << why;
  const KernelSource k{.name = "loom_test_broken",
                       .source = "extern \"C\" __global__ void loom_test_broken(float *data0) { data0[0] = ; }\n",
                       .blocks = 1,
                       .threads = 1};
  CompileStats stats;
  try {
    d->compile({k}, stats);
    FAIL() << "a broken kernel compiled";
  } catch (const InternalError &e) {
    EXPECT_NE(std::string(e.what()).find("loom_test_broken"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::runtime::cuda
