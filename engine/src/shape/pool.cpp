#include "shape/pool.h"

#include <cstdlib>
#include <new>
#include <utility>

#if defined(__SANITIZE_ADDRESS__)
#define LOOM_POOL_BYPASS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOOM_POOL_BYPASS 1
#endif
#endif

namespace loom::shape {

namespace {

#ifdef LOOM_POOL_BYPASS
constexpr bool kBypass = true;
#else
constexpr bool kBypass = false;
#endif

constexpr size_t kStep = 16, kClasses = 32, kMaxBytes = kStep * kClasses;
constexpr size_t kMaxKeptBytes = size_t{8} << 20;  // per thread
constexpr size_t kMinLargeBytes = 1024;              // smaller: the C library's own per-thread cache serves them
constexpr size_t kMaxLargeKeptBytes = size_t{16} << 20;  // per thread

struct Block {
  Block *next;
};

struct Large {
  void *p = nullptr;
  size_t bytes = 0;
};

struct Lists {
  Block *head[kClasses] = {};
  size_t kept_bytes = 0;
  Large large[16];  // freed large blocks, by exact size
  size_t large_bytes = 0;
  ~Lists();
};

thread_local bool t_exited = false;  // plain data: readable after the thread's Lists is destroyed
thread_local Lists t_lists;

Lists::~Lists() {
  t_exited = true;
  for (Block *&h : head)
    while (h) std::free(std::exchange(h, h->next));
  for (Large &l : large) std::free(l.p);
}

size_t class_of(size_t bytes) { return (bytes + kStep - 1) / kStep - 1; }

bool large(size_t bytes) { return !kBypass && bytes >= kMinLargeBytes && !t_exited; }

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

bool pool_enabled() { return !kBypass; }
size_t pool_kept_bytes() { return t_exited ? 0 : t_lists.kept_bytes; }

void *pool_allocate(size_t bytes) {
  if (!kBypass && bytes <= kMaxBytes && bytes > 0) {
    const size_t c = class_of(bytes);
    if (Block *b = t_exited ? nullptr : t_lists.head[c]) {
      t_lists.head[c] = b->next;
      t_lists.kept_bytes -= (c + 1) * kStep;
      return b;
    }
    bytes = (c + 1) * kStep;  // the class's size: the block can serve any request of the class later
  } else if (large(bytes)) {
    if (void *p = take_large(bytes)) return p;
  }
  if (void *p = std::malloc(bytes)) return p;
  throw std::bad_alloc();
}

void pool_free(void *p, size_t bytes) {
  if (!kBypass && bytes <= kMaxBytes && bytes > 0 && !t_exited) {
    const size_t c = class_of(bytes);
    if (t_lists.kept_bytes + (c + 1) * kStep <= kMaxKeptBytes) {
      t_lists.head[c] = new (p) Block{t_lists.head[c]};
      t_lists.kept_bytes += (c + 1) * kStep;
      return;
    }
  } else if (large(bytes) && keep_large(p, bytes)) {
    return;
  }
  std::free(p);
}

}  // namespace loom::shape
