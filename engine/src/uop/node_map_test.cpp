#include "uop/node_map.h"

#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

#include "shape/pool.h"

namespace loom::uop {
namespace {

// reserve(n) sizes the slot array for n keys at once: inserting them moves
// no entry (a growth would rehash them all into a new array).
TEST(NodeMap, AReservedMapKeepsItsEntriesInPlace) {
  std::vector<int> keys(1000);
  NodeMap<int> m;
  m.reserve(keys.size());
  int *first = m.insert(&keys[0]).first;
  *first = 42;
  for (size_t i = 1; i < keys.size(); i++) *m.insert(&keys[i]).first = static_cast<int>(i);
  EXPECT_EQ(m.find(&keys[0]), first);
  EXPECT_EQ(*first, 42);
  EXPECT_EQ(m.size(), keys.size());
  for (size_t i = 1; i < keys.size(); i++) ASSERT_EQ(*m.find(&keys[i]), static_cast<int>(i));
}

TEST(NodeMap, AMapGrowsPastItsReservation) {
  std::vector<int> keys(100);
  NodeMap<int> m;
  m.reserve(10);
  for (size_t i = 0; i < keys.size(); i++) *m.insert(&keys[i]).first = static_cast<int>(i);
  for (size_t i = 0; i < keys.size(); i++) ASSERT_EQ(*m.find(&keys[i]), static_cast<int>(i));
  EXPECT_FALSE(m.contains(&m));
}

// Copies and moves of a map past its local slots own their slot arrays: the
// source's entries survive a copy, a moved-from map is empty and usable.
TEST(NodeMap, CopiesAndMovesOfALargeMapKeepTheirEntries) {
  std::vector<int> keys(300);
  NodeMap<std::shared_ptr<int>> m;
  for (size_t i = 0; i < keys.size(); i++) m[&keys[i]] = std::make_shared<int>(static_cast<int>(i));
  NodeMap<std::shared_ptr<int>> copy = m;
  NodeMap<std::shared_ptr<int>> moved = std::move(m);
  EXPECT_EQ(m.size(), 0u);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  EXPECT_FALSE(m.contains(&keys[0]));
  *m.insert(&keys[1]).first = std::make_shared<int>(-1);
  EXPECT_EQ(**m.find(&keys[1]), -1);
  for (size_t i = 0; i < keys.size(); i++) {
    ASSERT_EQ(**copy.find(&keys[i]), static_cast<int>(i));
    ASSERT_EQ(**moved.find(&keys[i]), static_cast<int>(i));
    ASSERT_EQ(copy.find(&keys[i])->get(), moved.find(&keys[i])->get());  // the copy shares the values
  }
  copy = moved;  // assigning over a map that has an array of its own
  EXPECT_EQ(copy.size(), keys.size());
}

// A large map's slot array goes back to a per-thread cache when the map goes,
// and the next map of that size on the thread takes it: a realize's passes
// build such tables every time, without a large malloc each.
TEST(NodeMap, ALargeMapsSlotArrayServesTheNextMapOfItsSize) {
  if (!shape::pool_enabled()) GTEST_SKIP() << "the cache is bypassed under AddressSanitizer";
  std::vector<int> keys(600);
  const void *first = nullptr, *now = nullptr;
  size_t size = 0;
  std::thread([&] {  // a thread of its own, whose cache starts empty
    {
      NodeMap<long> m;
      m.reserve(keys.size());
      for (auto &k : keys) m[&k] = 1;
      m.for_each([&](const void *, const long &v) {
        if (!first) first = &v;
      });
    }
    // Without the cache, the C library would hand the freed array to this
    // allocation of its size.
    const size_t bytes = 2048 * sizeof(NodeMap<long>::Slot);  // reserve(600): 2048 slots
    void *other = ::operator new(bytes);
    NodeMap<long> again;
    again.reserve(keys.size());
    EXPECT_FALSE(again.contains(&keys[0]));  // a recycled array starts empty
    for (auto &k : keys) again[&k] = 2;
    again.for_each([&](const void *, const long &v) {
      if (!now) now = &v;
    });
    size = again.size();
    ::operator delete(other);
  }).join();
  EXPECT_EQ(now, first);
  EXPECT_EQ(size, keys.size());
}

}  // namespace
}  // namespace loom::uop
