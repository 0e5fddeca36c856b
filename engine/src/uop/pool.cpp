#include "uop/pool.h"

#include <cstdlib>
#include <new>
#include <utility>

namespace loom::uop {

namespace {

constexpr size_t kStep = 16, kClasses = 32, kMaxBytes = kStep * kClasses;
constexpr size_t kMaxKept = 1 << 14;  // per class and thread: a few MB at most

struct Block {
  Block *next;
};

struct Lists {
  Block *head[kClasses] = {};
  size_t kept[kClasses] = {};
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

void *pool_allocate(size_t bytes) {
  if (bytes <= kMaxBytes && bytes > 0) {
    const size_t c = class_of(bytes);
    if (Block *b = t_exited ? nullptr : t_lists.head[c]) {
      t_lists.head[c] = b->next;
      t_lists.kept[c]--;
      return b;
    }
    bytes = (c + 1) * kStep;  // the class's size: the block can serve any request of the class later
  }
  if (void *p = std::malloc(bytes)) return p;
  throw std::bad_alloc();
}

void pool_free(void *p, size_t bytes) {
  if (bytes <= kMaxBytes && bytes > 0 && !t_exited) {
    const size_t c = class_of(bytes);
    if (t_lists.kept[c] < kMaxKept) {
      t_lists.head[c] = new (p) Block{t_lists.head[c]};
      t_lists.kept[c]++;
      return;
    }
  }
  std::free(p);
}

}  // namespace loom::uop
