#include "uop/pool.h"

#include <gtest/gtest.h>

#include <thread>

namespace loom::uop {
namespace {

TEST(Pool, AFreedBlockServesTheNextRequestOfItsSizeClass) {
  void *a = pool_allocate(100);
  pool_free(a, 100);
  void *b = pool_allocate(112);  // 100 and 112 share the 16-byte class (97..112)
  EXPECT_EQ(a, b);
  void *c = pool_allocate(120);  // the next class: a new block
  EXPECT_NE(c, b);
  pool_free(b, 112);
  pool_free(c, 120);
}

TEST(Pool, LargeRequestsGoStraightToMalloc) {
  void *a = pool_allocate(4096);
  static_cast<char *>(a)[4095] = 1;
  pool_free(a, 4096);
  void *b = pool_allocate(200);
  static_cast<char *>(b)[199] = 1;
  pool_free(b, 200);
}

TEST(Pool, ABlockFreedOnAnotherThreadIsReusedThere) {
  void *a = pool_allocate(64);
  void *again = nullptr;
  std::thread([&] {
    pool_free(a, 64);
    again = pool_allocate(64);
    pool_free(again, 64);
  }).join();  // the thread's lists are released when it exits
  EXPECT_EQ(again, a);
}

TEST(Pool, BlocksAreWritableOverTheirWholeClass) {
  // A block made for a 33-byte request can later serve a 48-byte one.
  void *a = pool_allocate(33);
  pool_free(a, 33);
  auto *b = static_cast<char *>(pool_allocate(48));
  for (int i = 0; i < 48; i++) b[i] = static_cast<char>(i);
  EXPECT_EQ(b[47], 47);
  pool_free(b, 48);
}

}  // namespace
}  // namespace loom::uop
