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

struct Block {
  Block *next;
};

struct Lists {
  Block *head[kClasses] = {};
  size_t kept_bytes = 0;
  ~Lists();
};

thread_local bool t_exited = false;  // plain data: readable after the thread's Lists is destroyed
thread_local Lists t_lists;

Lists::~Lists() {
  t_exited = true;
  for (Block *&h : head)
    while (h) std::free(std::exchange(h, h->next));
}

size_t class_of(size_t bytes) { return (bytes + kStep - 1) / kStep - 1; }

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
  }
  std::free(p);
}

}  // namespace loom::shape
