// Per-thread free lists for the small objects a graph is made of (views, UOps,
// tensor handles, autograd nodes). A training step builds a few thousand of each and
// drops them together; the C library's allocator caches only a handful of
// freed blocks per size per thread, so most of those went through its slow
// path. Blocks come from malloc and are kept by size class (16-byte steps up
// to 512 bytes) on the freeing thread's list, up to 8 MB a thread, for its
// next allocation of that size. Freed blocks of 1 KB and more (the
// scheduler's tables over a graph, NodeMap) are kept too, up to 16 of them
// and 16 MB a thread, for the next request of exactly their size: a large
// malloc would also make the C library sweep its cache of freed small blocks,
// which the graph's many small objects then miss. Under AddressSanitizer the lists are bypassed, so
// that it sees every free (a pooled block is never poisoned).
#pragma once
#include <cstddef>
#include <new>
#include <utility>
#include <vector>

namespace loom::shape {

void *pool_allocate(size_t bytes);
void pool_free(void *p, size_t bytes);
bool pool_enabled();       // false in a sanitizer build
size_t pool_kept_bytes();  // what this thread's lists of small blocks hold now

// A std allocator over the pool, for std::allocate_shared.
template <typename T>
struct PoolAlloc {
  using value_type = T;
  PoolAlloc() = default;
  template <typename U>
  PoolAlloc(const PoolAlloc<U> &) {}
  T *allocate(size_t n) { return static_cast<T *>(pool_allocate(n * sizeof(T))); }
  void deallocate(T *p, size_t n) { pool_free(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const PoolAlloc<U> &) const { return true; }
};

// A vector whose elements live in the pool: the small lists a graph's objects
// carry (a tracker's views, an autograd node's inputs, a kernel's buffers,
// pointer shifts and runtime scalars).
template <typename T>
using PoolVector = std::vector<T, PoolAlloc<T>>;

// new and delete over the pool, for an object owned through a raw pointer
// (a node's memoized shape).
template <typename T, typename... A>
T *pool_new(A &&...args) {
  void *p = pool_allocate(sizeof(T));
  try {
    return new (p) T(std::forward<A>(args)...);
  } catch (...) {
    pool_free(p, sizeof(T));
    throw;
  }
}
template <typename T>
void pool_delete(const T *p) {
  if (!p) return;
  p->~T();
  pool_free(const_cast<T *>(p), sizeof(T));
}

}  // namespace loom::shape
