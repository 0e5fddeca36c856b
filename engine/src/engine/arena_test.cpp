// The transients' arena: buffers in use at a common kernel never share a
// byte, the others reuse each other's, and a realize's intermediates cost one
// allocation.
#include <gtest/gtest.h>

#include <random>

#include "engine/arena.h"
#include "engine/realize.h"

namespace loom::engine {
namespace {

bool overlap(size_t a0, size_t a1, size_t b0, size_t b1) { return a0 < b1 && b0 < a1; }

TEST(Arena, BuffersInUseTogetherNeverShareAByteAndTheOthersReuse) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<ArenaUse> uses;
    const size_t n = 1 + rng() % 40;
    size_t sum = 0;
    for (size_t k = 0; k < n; k++) {
      const size_t first = rng() % 30, last = first + rng() % 6;
      uses.push_back({first, last, 1 + rng() % 5000});
      sum += (uses.back().bytes + kArenaAlign - 1) / kArenaAlign * kArenaAlign;
    }
    size_t total = 0;
    const std::vector<size_t> at = plan_arena(uses, total);
    ASSERT_EQ(at.size(), n);
    EXPECT_LE(total, sum);
    for (size_t a = 0; a < n; a++) {
      EXPECT_EQ(at[a] % kArenaAlign, 0u);
      EXPECT_LE(at[a] + uses[a].bytes, total);
      for (size_t b = a + 1; b < n; b++) {
        if (uses[a].first <= uses[b].last && uses[b].first <= uses[a].last) {
          ASSERT_FALSE(overlap(at[a], at[a] + uses[a].bytes, at[b], at[b] + uses[b].bytes))
              << "trial " << trial << ": buffers " << a << " and " << b << " are in use together";
        }
      }
    }
  }
}

TEST(Arena, AChainNeedsTwoPlaces) {
  // Buffer k is written by kernel k and last read by kernel k + 1.
  std::vector<ArenaUse> uses;
  for (size_t k = 0; k < 10; k++) uses.push_back({k, k + 1, 1000});
  size_t total = 0;
  plan_arena(uses, total);
  EXPECT_EQ(total, 2 * 1024u);
}

// Items writing buffer k and reading buffer k - 1; the last one's result stays.
std::vector<ExecItem> chain(const std::vector<std::shared_ptr<uop::Buffer>> &bufs) {
  std::vector<ExecItem> items(bufs.size());
  for (size_t k = 0; k < bufs.size(); k++) {
    items[k].bufs.push_back(bufs[k]);
    if (k > 0) {
      items[k].bufs.push_back(bufs[k - 1]);
      items[k].release.push_back(bufs[k - 1]);
    }
  }
  return items;
}

TEST(Arena, ARunsTransientsShareOneAllocation) {
  std::vector<std::shared_ptr<uop::Buffer>> bufs;
  for (int k = 0; k < 6; k++) bufs.push_back(uop::Buffer::create(DType::Float32, 1000));
  const std::shared_ptr<uop::Buffer> held = uop::Buffer::create(DType::Float32, 1000);
  held->mem = allocate_tracked(4000);  // allocated before the run: keeps its memory
  std::vector<ExecItem> items = chain(bufs);
  items[2].bufs.push_back(held);
  items[2].release.push_back(held);
  const void *held_mem = held->data();
  const MemoryStats before = memory_stats();
  const Placement placement = place_transients(items);
  EXPECT_EQ(placement.placed.size(), 5u);  // not the result, which no item releases
  EXPECT_EQ(placement.last, 5u);           // the last item reads the last of them
  ASSERT_EQ(placement.others.size(), 1u);  // `held` goes after its last reader
  EXPECT_EQ(placement.others[0], std::make_pair(size_t{2}, held.get()));
  EXPECT_EQ(memory_stats().live_buffers, before.live_buffers + 1);
  EXPECT_EQ(held->data(), held_mem);
  EXPECT_FALSE(bufs[5]->allocated());
  const char *base = static_cast<const char *>(bufs[0]->data());
  for (int k = 0; k < 5; k++) {
    const char *p = static_cast<const char *>(bufs[k]->data());
    EXPECT_TRUE(p == base || p == base + 4096) << "buffer " << k;  // two places, alternating
    if (k > 0) {
      EXPECT_NE(p, bufs[k - 1]->data());
    }
  }
  for (auto &b : bufs) b->mem.reset();
  EXPECT_EQ(memory_stats().live_buffers, before.live_buffers);  // the last one released gave it back
}

TEST(Arena, ARepeatedRunReusesItsPlan) {
  auto run = [] {
    std::vector<std::shared_ptr<uop::Buffer>> bufs;
    for (int k = 0; k < 7; k++) bufs.push_back(uop::Buffer::create(DType::Float32, 1000 + 10 * k));
    std::vector<ExecItem> items = chain(bufs);
    EXPECT_EQ(place_transients(items).placed.size(), 6u);
    std::vector<ptrdiff_t> at;
    for (int k = 0; k < 6; k++)
      at.push_back(static_cast<const char *>(bufs[k]->data()) - static_cast<const char *>(bufs[0]->data()));
    return at;
  };
  const size_t made = arena_plans_made();
  const std::vector<ptrdiff_t> first = run();
  EXPECT_EQ(arena_plans_made(), made + 1);
  EXPECT_EQ(run(), first);  // the same places, in a new allocation
  EXPECT_EQ(arena_plans_made(), made + 1);
  // Another list of uses gets a plan of its own.
  std::vector<ArenaUse> other{{0, 1, 100}, {1, 2, 100}, {0, 2, 7}};
  size_t total = 0;
  EXPECT_EQ(plan_arena_cached(other, total), plan_arena(other, total));
  EXPECT_EQ(arena_plans_made(), made + 2);
}

}  // namespace
}  // namespace loom::engine
