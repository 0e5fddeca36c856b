// A Write adding into its output: on the CUDA target its elements run across
// threads with atomic adds; on the C target serially. Values on whichever
// device the tests run (the CPU, the CUDA emulator, a GPU).
#include <gtest/gtest.h>

#include "loom/inspect.h"
#include "loom/tensor.h"

namespace loom {
namespace {

// Many duplicates: 4096 values added into 8 slots of each of 2 rows.
Tensor sums(DType dt) {
  std::vector<double> src(2 * 4096), idx(2 * 4096);
  for (size_t i = 0; i < src.size(); i++) {
    src[i] = static_cast<double>(i % 13) - 6;
    idx[i] = static_cast<double>((i * 7) % 8);
  }
  const Tensor acc = Tensor::zeros({2, 8}, dt);
  return acc.scatter_add(1, Tensor::from_vector(idx, {2, 4096}, DType::Int64),
                         Tensor::from_vector(src, {2, 4096}, dt));
}

const KernelInfo &write_kernel(const std::vector<KernelInfo> &ks) {
  for (const KernelInfo &k : ks)
    if (k.name.rfind("w_", 0) == 0) return k;
  throw std::runtime_error("no write kernel");
}

TEST(AtomicWrites, AScatterAddRunsAcrossThreadsOnCudaAndSeriallyInC) {
  for (DType dt : {DType::Float32, DType::Float64, DType::Int32, DType::Int64}) {
    const KernelInfo k = write_kernel(kernels_of({sums(dt)}));
    EXPECT_NE(k.cuda_source.find("atomicAdd("), std::string::npos) << dtype_name(dt) << "\n" << k.cuda_source;
    EXPECT_EQ(k.cuda_blocks * k.cuda_threads >= 2 * 4096, true) << dtype_name(dt);
    EXPECT_EQ(k.c_source.find("atomicAdd"), std::string::npos);
  }
  // No atomic add for these: the stores stay serial, one thread.
  for (DType dt : {DType::Float16, DType::Int16}) {
    const KernelInfo k = write_kernel(kernels_of({sums(dt)}));
    EXPECT_EQ(k.cuda_source.find("atomicAdd("), std::string::npos) << dtype_name(dt);
    EXPECT_EQ(k.cuda_blocks * k.cuda_threads, 1) << dtype_name(dt);
  }
}

TEST(AtomicWrites, DuplicatesAddUp) {
  for (DType dt : {DType::Float32, DType::Float64, DType::Int32, DType::Int64}) {
    const HostTensor h = sums(dt).to_host();
    for (int64_t r = 0; r < 2; r++)
      for (int64_t j = 0; j < 8; j++) {
        double want = 0;  // integers: every order of the adds gives the same sum
        for (int64_t i = 0; i < 4096; i++) {
          const int64_t flat = r * 4096 + i;
          if ((flat * 7) % 8 == j) want += static_cast<double>(flat % 13) - 6;
        }
        EXPECT_EQ(h.get(r * 8 + j), want) << dtype_name(dt) << " row " << r << " slot " << j;
      }
  }
}

// A scatter (no add) keeps its order: the last of the duplicates wins, serially.
TEST(AtomicWrites, AScatterWithoutAddStaysSerial) {
  const Tensor idx = Tensor::from_vector({0, 0, 1, 1}, {1, 4}, DType::Int64);
  const Tensor src = Tensor::from_vector({1, 2, 3, 4}, {1, 4});
  const Tensor out = Tensor::zeros({1, 2}).scatter(1, idx, src);
  const KernelInfo k = write_kernel(kernels_of({out}));
  EXPECT_EQ(k.cuda_source.find("atomicAdd("), std::string::npos);
  EXPECT_EQ(k.cuda_blocks * k.cuda_threads, 1);
  const HostTensor h = out.to_host();
  EXPECT_EQ(h.get(0), 2);
  EXPECT_EQ(h.get(1), 4);
}

}  // namespace
}  // namespace loom
