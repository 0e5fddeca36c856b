// How the kernel misses of one compile split into objects built in parallel.
#include <gtest/gtest.h>

#include "runtime/compile_cache.h"

namespace loom::runtime {
namespace {

TEST(CompileCache, MissesBuildInBatchesThatKeepEveryCoreBusyEachRound) {
  EXPECT_EQ(batch_count(128, 48, 2), 4u);  // 4 of 32 in two rounds, not 48 + 48 then 32 alone
  EXPECT_EQ(batch_count(49, 48, 2), 2u);
  EXPECT_EQ(batch_count(96, 48, 2), 2u);
  EXPECT_EQ(batch_count(97, 48, 2), 4u);
  EXPECT_EQ(batch_count(128, 48, 16), 16u);  // one per core
  EXPECT_EQ(batch_count(3, 48, 16), 3u);     // never an empty batch
  EXPECT_EQ(batch_count(1, 48, 2), 1u);
  EXPECT_EQ(batch_count(10, 1, 4), 10u);  // a compiler that takes one kernel at a time
  for (size_t kernels = 1; kernels < 400; kernels++)
    for (size_t cores : {1u, 2u, 3u, 16u}) {
      const size_t n = batch_count(kernels, 48, cores);
      EXPECT_LE(n, kernels);
      EXPECT_LE((kernels + n - 1) / n, 48u) << kernels << " kernels, " << cores << " cores";  // the limit holds
      if (kernels >= cores) EXPECT_EQ(n % cores, 0u) << kernels << " kernels, " << cores << " cores";
    }
}

}  // namespace
}  // namespace loom::runtime
