// The CPU device's buffer pool: freed large buffers are handed out again, the
// memory kept is bounded, and a computation repeated on new buffers of the
// same sizes asks the system for no more memory after its first run.
#include "runtime/cpu/buffer_pool.h"

#include <gtest/gtest.h>

#include <vector>

#include "loom/tensor.h"
#include "runtime/device.h"

namespace loom::runtime::cpu {
namespace {

TEST(BufferPool, AFreedLargeBufferIsReusedForItsSize) {
  trim_pool();
  const size_t bytes = 3 * kMapBytes + 100;
  void *first = allocate_buffer(bytes).get();  // freed at once
  const PoolStats before = pool_stats();
  EXPECT_GE(before.kept_bytes, bytes);
  auto again = allocate_buffer(bytes);
  EXPECT_EQ(again.get(), first);
  EXPECT_EQ(pool_stats().reused, before.reused + 1);
  EXPECT_EQ(pool_stats().system_allocations, before.system_allocations);
  auto other = allocate_buffer(5 * kMapBytes);  // another size: a new mapping
  EXPECT_NE(other.get(), first);
  EXPECT_EQ(pool_stats().system_allocations, before.system_allocations + 1);
}

TEST(BufferPool, KeptMemoryIsBounded) {
  trim_pool();
  const size_t big = kPoolBytes / 4;  // mapped, never touched: costs no memory
  std::vector<std::shared_ptr<void>> held;
  for (int i = 0; i < 6; i++) held.push_back(allocate_buffer(big));
  held.clear();
  EXPECT_EQ(pool_stats().kept_bytes, 4 * big);  // the other two went back to the system
  trim_pool();
  EXPECT_EQ(pool_stats().kept_bytes, 0u);
}

TEST(BufferPool, ARepeatedComputationAllocatesNothingNewAfterItsFirstRun) {
  if (std::string(runtime::default_device().name()) != "CPU") GTEST_SKIP() << "the CPU device's buffer pool";
  Tensor a = Tensor::randn({1 << 22}).realize();  // 16 MiB
  for (int i = 0; i < 2; i++) a.neg().realize();
  const PoolStats warm = pool_stats();
  for (int i = 0; i < 5; i++) a.neg().realize();
  EXPECT_EQ(pool_stats().system_allocations, warm.system_allocations);
  EXPECT_GE(pool_stats().reused, warm.reused + 5);
}

}  // namespace
}  // namespace loom::runtime::cpu
