#include "shape/pool.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>
#include <vector>

namespace loom::shape {
namespace {

// The reuse tests skip in a sanitizer build, which bypasses the lists.
TEST(Pool, AFreedBlockServesTheNextRequestOfItsSizeClass) {
  if (!pool_enabled()) GTEST_SKIP() << "the pool is bypassed under AddressSanitizer";
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

// A freed block of 1 KB or more is kept for the next request of exactly its
// size (without the cache, malloc would hand it to the held allocation). On
// a thread of its own, whose cache starts empty.
TEST(Pool, ALargeFreedBlockServesTheNextRequestOfItsSize) {
  if (!pool_enabled()) GTEST_SKIP() << "the pool is bypassed under AddressSanitizer";
  void *a = nullptr, *b = nullptr, *other = nullptr;
  std::thread([&] {
    a = pool_allocate(40000);
    pool_free(a, 40000);
    void *held = std::malloc(40000);
    other = pool_allocate(40016);  // another size: not the kept block
    b = pool_allocate(40000);
    pool_free(b, 40000);
    pool_free(other, 40016);
    std::free(held);
  }).join();
  EXPECT_NE(other, a);
  EXPECT_EQ(b, a);
}

TEST(Pool, ABlockFreedOnAnotherThreadIsReusedThere) {
  if (!pool_enabled()) GTEST_SKIP() << "the pool is bypassed under AddressSanitizer";
  void *a = pool_allocate(64);
  void *again = nullptr;
  std::thread([&] {
    pool_free(a, 64);
    again = pool_allocate(64);
    pool_free(again, 64);
  }).join();  // the thread's lists are released when it exits
  EXPECT_EQ(again, a);
}

TEST(Pool, AThreadKeepsAtMostEightMegabytes) {
  if (!pool_enabled()) GTEST_SKIP() << "the pool is bypassed under AddressSanitizer";
  std::vector<void *> blocks;
  for (int i = 0; i < 20000; i++) blocks.push_back(pool_allocate(512));  // 10 MB
  const size_t before = pool_kept_bytes();
  for (void *b : blocks) pool_free(b, 512);
  EXPECT_LE(pool_kept_bytes(), size_t{8} << 20);  // the rest went back to malloc
  EXPECT_GT(pool_kept_bytes(), (size_t{8} << 20) - 512);
  EXPECT_GT(pool_kept_bytes(), before);
  for (void *&b : blocks) b = pool_allocate(512);
  for (void *b : blocks) pool_free(b, 512);
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
}  // namespace loom::shape
