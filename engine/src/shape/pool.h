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
//
// The common case, a small block taken from or put back on its list, is
// inline and reads the thread's lists without a guard: they are plain data,
// zero until the thread first keeps a block, and what they hold is freed at
// the thread's exit by a second thread-local object made at that point.
#pragma once
#include <cstddef>
#include <new>
#include <utility>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define LOOM_POOL_BYPASS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOOM_POOL_BYPASS 1
#endif
#endif

namespace loom::shape {

namespace pool_detail {

#ifdef LOOM_POOL_BYPASS
constexpr bool kBypass = true;
#else
constexpr bool kBypass = false;
#endif
constexpr size_t kStep = 16, kClasses = 32, kMaxBytes = kStep * kClasses;
constexpr size_t kMaxKeptBytes = size_t{8} << 20;  // per thread

struct Block {
  Block *next;
};
struct Large {
  void *p;
  size_t bytes;
};
// One thread's lists: trivially constructed and destroyed, so reading them
// needs no initialization check.
struct Lists {
  Block *head[kClasses];
  size_t kept_bytes;
  Large large[16];  // freed large blocks, by exact size
  size_t large_bytes;
  bool keeping;  // from the thread's first kept block until its exit
  bool exited;   // the thread's lists were released (at its exit)
};
extern constinit thread_local Lists t_lists;

inline size_t class_of(size_t bytes) { return (bytes + kStep - 1) / kStep - 1; }

void *allocate_slow(size_t bytes);
void free_slow(void *p, size_t bytes);

}  // namespace pool_detail

inline void *pool_allocate(size_t bytes) {
  using namespace pool_detail;
  if (!kBypass && bytes - 1 < kMaxBytes) {  // 1..kMaxBytes
    const size_t c = class_of(bytes);
    if (Block *b = t_lists.head[c]) {
      t_lists.head[c] = b->next;
      t_lists.kept_bytes -= (c + 1) * kStep;
      return b;
    }
  }
  return allocate_slow(bytes);
}

inline void pool_free(void *p, size_t bytes) {
  using namespace pool_detail;
  if (!kBypass && bytes - 1 < kMaxBytes && t_lists.keeping) {
    const size_t c = class_of(bytes);
    if (t_lists.kept_bytes + (c + 1) * kStep <= kMaxKeptBytes) {
      t_lists.head[c] = new (p) Block{t_lists.head[c]};
      t_lists.kept_bytes += (c + 1) * kStep;
      return;
    }
  }
  free_slow(p, bytes);
}

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
