#include "shape/pool_function.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace loom::shape {
namespace {

using IntFn = PoolFunction<int(int)>;

TEST(PoolFunction, CallsItsTargetAndReportsWhetherItHasOne) {
  IntFn empty, null = nullptr;
  EXPECT_FALSE(empty);
  EXPECT_FALSE(null);
  EXPECT_THROW(empty(1), std::bad_function_call);
  const int base = 40;
  IntFn add = [base](int x) { return base + x; };
  ASSERT_TRUE(add);
  EXPECT_EQ(add(2), 42);
  IntFn from_pointer = +[](int x) { return -x; };
  EXPECT_EQ(from_pointer(3), -3);
}

// A copy owns a target of its own (a mutable lambda's state is not shared);
// a move leaves the source empty; assigning nullptr drops the target.
TEST(PoolFunction, CopiesOwnTheirTargetsAndMovesEmptyTheSource) {
  IntFn counter = [n = 0](int step) mutable { return n += step; };
  EXPECT_EQ(counter(1), 1);
  IntFn copy = counter;
  EXPECT_EQ(copy(10), 11);
  EXPECT_EQ(counter(1), 2);  // the original's count did not move
  IntFn moved = std::move(counter);
  EXPECT_FALSE(counter);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  EXPECT_EQ(moved(1), 3);
  moved = nullptr;
  EXPECT_FALSE(moved);
  moved = copy;
  EXPECT_EQ(moved(0), 11);
  const IntFn &self = moved;
  moved = self;  // self-assignment keeps the target
  EXPECT_EQ(moved(0), 11);
}

// Each captured value is destroyed once, when the last function holding a
// copy of it goes.
TEST(PoolFunction, DestroysEachCaptureOnce) {
  auto token = std::make_shared<std::string>("held");
  {
    PoolFunction<size_t()> f = [token] { return token->size(); };
    PoolFunction<size_t()> g = f;
    EXPECT_EQ(token.use_count(), 3);
    g = nullptr;
    EXPECT_EQ(token.use_count(), 2);
    EXPECT_EQ(f(), 4u);
  }
  EXPECT_EQ(token.use_count(), 1);
}

// The target's block is the pool's: dropping the function gives it to this
// thread's lists (a std::function would give it back to malloc). On a thread
// of its own, whose lists start empty.
TEST(PoolFunction, ItsTargetLivesInThePool) {
  if (!pool_enabled()) GTEST_SKIP() << "the pool is bypassed under AddressSanitizer";
  size_t before = 0, after = 0;
  std::thread([&] {
    auto token = std::make_shared<int>(7);
    before = pool_kept_bytes();
    { PoolFunction<int()> f = [token, pad = std::string(40, 'x')] { return *token + static_cast<int>(pad.size()); }; }
    after = pool_kept_bytes();
  }).join();
  EXPECT_EQ(before, 0u);
  EXPECT_GE(after, sizeof(std::shared_ptr<int>) + sizeof(std::string));
}

}  // namespace
}  // namespace loom::shape
