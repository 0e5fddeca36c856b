// NodeMap: a map keyed by node address, for the per-graph tables a pass
// builds (visited sets, memos, counts). Open addressing in one array: one
// allocation per growth instead of one per entry, which is most of the cost
// of walking a small graph with std::unordered_map. Iteration order is the
// slot order (unspecified, as with unordered_map); keys are never removed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace loom::uop {

template <typename V>
class NodeMap {
 public:
  using Slot = std::pair<const void *, V>;

  // The value for k, default-constructed when k is new.
  V &operator[](const void *k) { return *insert(k).first; }
  // {value, true} when k was new.
  std::pair<V *, bool> insert(const void *k) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    Slot &s = slots_[probe(k)];
    if (s.first) return {&s.second, false};
    s.first = k;
    size_++;
    return {&s.second, true};
  }
  V *find(const void *k) {
    if (slots_.empty()) return nullptr;
    Slot &s = slots_[probe(k)];
    return s.first ? &s.second : nullptr;
  }
  const V *find(const void *k) const { return const_cast<NodeMap *>(this)->find(k); }
  bool contains(const void *k) const { return find(k) != nullptr; }
  size_t size() const { return size_; }

  template <typename F>
  void for_each(F &&f) const {
    for (auto &s : slots_)
      if (s.first) f(s.first, s.second);
  }

 private:
  size_t probe(const void *k) const {
    const size_t mask = slots_.size() - 1;
    size_t i = (reinterpret_cast<uintptr_t>(k) >> 4) * 0x9e3779b97f4a7c15ull >> 20 & mask;
    while (slots_[i].first && slots_[i].first != k) i = (i + 1) & mask;
    return i;
  }
  void grow() {
    std::vector<Slot> old(slots_.empty() ? 16 : 2 * slots_.size());
    old.swap(slots_);
    for (auto &s : old)
      if (s.first) slots_[probe(s.first)] = std::move(s);
  }

  std::vector<Slot> slots_;  // power-of-two size; a null key marks an empty slot
  size_t size_ = 0;
};

// A set of node addresses.
class NodeSet {
 public:
  bool insert(const void *k) { return map_.insert(k).second; }
  bool contains(const void *k) const { return map_.contains(k); }
  size_t size() const { return map_.size(); }

 private:
  NodeMap<char> map_;
};

}  // namespace loom::uop
