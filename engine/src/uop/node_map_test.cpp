#include "uop/node_map.h"

#include <gtest/gtest.h>

#include <vector>

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

}  // namespace
}  // namespace loom::uop
