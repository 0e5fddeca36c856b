// The process group's errors before any library is started: what is not
// initialized, an unknown backend, and what a missing library is named as.
// The collectives themselves run between real processes under mpirun
// (python/tests/test_distributed.py).
#include <gtest/gtest.h>

#include "loom/distributed.h"

namespace loom::distributed {
namespace {

TEST(Distributed, EveryCallBeforeInitNamesTheMissingInit) {
  ASSERT_FALSE(initialized());
  const Tensor t = Tensor::ones({3});
  for (auto call : {+[](const Tensor &) { rank(); }, +[](const Tensor &) { world_size(); },
                    +[](const Tensor &x) { all_reduce(x); }, +[](const Tensor &x) { broadcast(x, 0); },
                    +[](const Tensor &x) { all_gather(x); }, +[](const Tensor &) { barrier(); }}) {
    try {
      call(t);
      ADD_FAILURE() << "no error";
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find("Default process group has not been initialized"), std::string::npos)
          << e.what();
    }
  }
}

TEST(Distributed, AnUnknownBackendIsAValueErrorNamingTheKnownOnes) {
  try {
    init("tcp");
    ADD_FAILURE() << "no error";
  } catch (const ValueError &e) {
    EXPECT_STREQ(e.what(), "init_process_group: unknown backend 'tcp' (loom has mpi and nccl)");
  }
  EXPECT_FALSE(initialized());
  EXPECT_EQ(missing("tcp"), "unknown backend 'tcp' (loom has mpi and nccl)");
}

TEST(Distributed, AMissingLibraryIsNamedByItsBackend) {
  for (const char *backend : {"mpi", "nccl"}) {
    const std::string why = missing(backend);
    if (!why.empty()) EXPECT_EQ(why.rfind(std::string(backend) + ": ", 0), 0u) << why;
  }
}

}  // namespace
}  // namespace loom::distributed
