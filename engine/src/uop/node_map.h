// NodeMap: a map keyed by node address, for the per-graph tables a pass
// builds (visited sets, memos, counts). Open addressing in one array: one
// allocation per growth instead of one per entry, which is most of the cost
// of walking a small graph with std::unordered_map (and none up to 8
// entries). Iteration order is the slot order (unspecified, as with
// unordered_map); keys are never removed.
#pragma once
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>

#include "shape/pool.h"

namespace loom::uop {

template <typename V>
class NodeMap {
 public:
  // A null key marks an empty slot. Only the key is initialized up front
  // (a value is set when its key is inserted), so a small map costs a few
  // stores, not the zeroing of every slot.
  struct Slot {
    const void *first = nullptr;
    V second;
  };

  NodeMap() = default;
  NodeMap(const NodeMap &o) { *this = o; }
  NodeMap(NodeMap &&o) noexcept { *this = std::move(o); }
  ~NodeMap() { release(); }
  NodeMap &operator=(const NodeMap &o) {
    if (this == &o) return *this;
    Slot *copy = o.heap_ ? fresh_slots(o.cap_) : nullptr;  // may throw: this map is unchanged then
    if (copy)
      for (size_t i = 0; i < o.cap_; i++) copy[i] = o.heap_[i];
    release();
    heap_ = copy;
    cap_ = copy ? o.cap_ : 0;
    local_ = o.local_;
    size_ = o.size_;
    return *this;
  }
  NodeMap &operator=(NodeMap &&o) noexcept {
    if (this == &o) return *this;
    release();
    heap_ = std::exchange(o.heap_, nullptr);
    cap_ = std::exchange(o.cap_, 0);
    local_ = std::move(o.local_);
    size_ = o.size_;
    for (Slot &l : o.local_) l.first = nullptr;
    o.size_ = 0;
    return *this;
  }

  // Room for n keys without growing (a pass that knows its graph's size
  // skips the rehashes of growing one slot array after another).
  void reserve(size_t n) {
    size_t want = kLocal;
    while (want < 2 * n) want *= 2;
    if (want > capacity()) rehash(want);
  }
  // The value for k, default-constructed when k is new.
  V &operator[](const void *k) { return *insert(k).first; }
  // {value, true} when k was new.
  std::pair<V *, bool> insert(const void *k) {
    if (2 * (size_ + 1) > capacity()) grow();
    Slot &s = slots()[probe(k)];
    if (s.first) return {&s.second, false};
    s.first = k;
    s.second = V();
    size_++;
    return {&s.second, true};
  }
  V *find(const void *k) {
    Slot &s = slots()[probe(k)];
    return s.first ? &s.second : nullptr;
  }
  const V *find(const void *k) const { return const_cast<NodeMap *>(this)->find(k); }
  bool contains(const void *k) const { return find(k) != nullptr; }
  size_t size() const { return size_; }

  template <typename F>
  void for_each(F &&f) const {
    const Slot *p = slots();
    for (size_t i = 0; i < capacity(); i++)
      if (p[i].first) f(p[i].first, p[i].second);
  }

 private:
  // The first kLocal slots live in the map itself: the tables of a small
  // graph's passes never touch the heap.
  static constexpr size_t kLocal = 16;

  Slot *slots() { return heap_ ? heap_ : local_.data(); }
  const Slot *slots() const { return heap_ ? heap_ : local_.data(); }
  size_t capacity() const { return heap_ ? cap_ : kLocal; }

  size_t probe(const void *k) const {
    const Slot *p = slots();
    const size_t mask = capacity() - 1;
    // Fibonacci hashing: the product's top bits, which every bit of the address moves.
    const int shift = 64 - std::bit_width(mask);
    size_t i = static_cast<size_t>((reinterpret_cast<uintptr_t>(k) * 0x9e3779b97f4a7c15ull) >> shift);
    while (p[i].first && p[i].first != k) i = (i + 1) & mask;
    return i;
  }
  void grow() { rehash(2 * capacity()); }
  void rehash(size_t slots) {
    Slot *fresh = fresh_slots(slots);  // may throw: this map is unchanged then
    Slot *old = std::exchange(heap_, fresh);
    const size_t old_cap = std::exchange(cap_, slots);
    Slot *from = old ? old : local_.data();
    const size_t n = old ? old_cap : kLocal;
    for (size_t i = 0; i < n; i++)
      if (from[i].first) heap_[probe(from[i].first)] = std::move(from[i]);
    if (old) free_slots(old, old_cap);
  }
  // n slots with null keys, from the graph's pool: a large array freed by
  // the last map of its size (the scheduler's tables, every realize) serves
  // this one.
  static Slot *fresh_slots(size_t n) {
    auto *p = static_cast<Slot *>(shape::pool_allocate(n * sizeof(Slot)));
    for (size_t i = 0; i < n; i++) new (p + i) Slot();
    return p;
  }
  static void free_slots(Slot *p, size_t n) {
    for (size_t i = 0; i < n; i++) p[i].~Slot();
    shape::pool_free(p, n * sizeof(Slot));
  }
  void release() {
    if (heap_) free_slots(std::exchange(heap_, nullptr), std::exchange(cap_, 0));
  }

  std::array<Slot, kLocal> local_;  // each Slot's key starts null
  Slot *heap_ = nullptr;  // cap_ slots (a power of two) once the local slots fill; a null key marks an empty slot
  size_t cap_ = 0;
  size_t size_ = 0;
};

// A set of node addresses.
class NodeSet {
 public:
  void reserve(size_t n) { map_.reserve(n); }
  bool insert(const void *k) { return map_.insert(k).second; }
  bool contains(const void *k) const { return map_.contains(k); }
  size_t size() const { return map_.size(); }

 private:
  NodeMap<char> map_;
};

}  // namespace loom::uop
