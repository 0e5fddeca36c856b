#include "shape/pool.h"

#include <cstdlib>
#include <new>
#include <utility>

namespace loom::shape {

namespace pool_detail {

constinit thread_local Lists t_lists{};

namespace {

constexpr size_t kMinLargeBytes = 1024;              // smaller: the C library's own per-thread cache serves them
constexpr size_t kMaxLargeKeptBytes = size_t{16} << 20;  // per thread

// Made when the thread first keeps a block; at the thread's exit it frees
// what the lists hold and stops them keeping more (blocks freed later, by
// other thread-local objects' destructors, go back to the C library).
struct Release {
  ~Release() {
    t_lists.keeping = false;
    t_lists.exited = true;
    for (Block *&h : t_lists.head)
      while (h) std::free(std::exchange(h, h->next));
    t_lists.kept_bytes = 0;
    for (Large &l : t_lists.large) std::free(std::exchange(l.p, nullptr));
    t_lists.large_bytes = 0;
  }
};
// Whether this thread may keep blocks; the first call makes its Release.
bool keeping() {
  if (t_lists.keeping) return true;
  if (kBypass || t_lists.exited) return false;
  thread_local Release release;
  (void)release;
  t_lists.keeping = true;
  return true;
}

void *take_large(size_t bytes) {
  for (Large &l : t_lists.large)
    if (l.p && l.bytes == bytes) {
      t_lists.large_bytes -= bytes;
      return std::exchange(l.p, nullptr);
    }
  return nullptr;
}

bool keep_large(void *p, size_t bytes) {
  if (t_lists.large_bytes + bytes > kMaxLargeKeptBytes) return false;
  for (Large &l : t_lists.large)
    if (!l.p) {
      l = {p, bytes};
      t_lists.large_bytes += bytes;
      return true;
    }
  return false;
}

}  // namespace

void *allocate_slow(size_t bytes) {
  if (!kBypass && bytes - 1 < kMaxBytes) {
    bytes = (class_of(bytes) + 1) * kStep;  // the class's size: the block can serve any request of the class later
  } else if (!kBypass && bytes >= kMinLargeBytes) {
    if (void *p = take_large(bytes)) return p;
  }
  if (void *p = std::malloc(bytes)) return p;
  throw std::bad_alloc();
}

void free_slow(void *p, size_t bytes) {
  if (bytes - 1 < kMaxBytes) {
    // The first block this thread keeps (or one past the lists' limit).
    if (!t_lists.keeping && keeping()) return pool_free(p, bytes);
  } else if (bytes >= kMinLargeBytes && keeping() && keep_large(p, bytes)) {
    return;
  }
  std::free(p);
}

}  // namespace pool_detail

bool pool_enabled() { return !pool_detail::kBypass; }
size_t pool_kept_bytes() { return pool_detail::t_lists.kept_bytes; }

}  // namespace loom::shape
