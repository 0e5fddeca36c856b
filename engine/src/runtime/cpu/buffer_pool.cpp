#include "runtime/cpu/buffer_pool.h"

#include <sys/mman.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/error.h"
#include "shape/pool.h"

namespace loom::runtime::cpu {

namespace {

struct Pool {
  std::mutex mu;
  std::unordered_map<size_t, std::vector<void *>> kept;  // by mapping size
  PoolStats stats;
};
Pool &pool() {
  static auto *p = new Pool();  // never destroyed: buffers may be freed during static destruction
  return *p;
}

[[noreturn]] void out_of_memory(size_t bytes) {
  throw Error("out of memory allocating a buffer of " + std::to_string(bytes) + " bytes");
}

void release(void *p, size_t mapped) {
  auto &pl = pool();
  {
    std::lock_guard<std::mutex> l(pl.mu);
    if (pl.stats.kept_bytes + mapped <= kPoolBytes) {
      pl.kept[mapped].push_back(p);
      pl.stats.kept_bytes += mapped;
      return;
    }
  }
  munmap(p, mapped);
}

constexpr size_t kHugePageBytes = size_t{2} << 20;

}  // namespace

std::shared_ptr<void> allocate_buffer(size_t bytes) {
  auto &pl = pool();
  if (bytes < kMapBytes) {
    const size_t n = std::max<size_t>(64, (bytes + 63) / 64 * 64);
    void *p = std::aligned_alloc(64, n);
    if (!p) out_of_memory(bytes);
    std::lock_guard<std::mutex> l(pl.mu);
    pl.stats.system_allocations++;
    return std::shared_ptr<void>(p, std::free, shape::PoolAlloc<char>());
  }
  const size_t mapped = (bytes + 4095) / 4096 * 4096;
  void *p = nullptr;
  {
    std::lock_guard<std::mutex> l(pl.mu);
    auto it = pl.kept.find(mapped);
    if (it != pl.kept.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
      pl.stats.kept_bytes -= mapped;
      pl.stats.reused++;
    } else {
      pl.stats.system_allocations++;
    }
  }
  if (!p) {
    p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      trim_pool();  // kept buffers of other sizes may be what is missing
      p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) out_of_memory(bytes);
    }
    // Huge pages where the system gives them on request: a kernel striding
    // through a large operand (a matmul's k rows) would otherwise miss the
    // TLB on every row. Advice only: ignored where unsupported.
    if (mapped >= kHugePageBytes) madvise(p, mapped, MADV_HUGEPAGE);
  }
  return std::shared_ptr<void>(p, [mapped](void *q) { release(q, mapped); }, shape::PoolAlloc<char>());
}

PoolStats pool_stats() {
  std::lock_guard<std::mutex> l(pool().mu);
  return pool().stats;
}

void trim_pool() {
  std::unordered_map<size_t, std::vector<void *>> kept;
  {
    auto &pl = pool();
    std::lock_guard<std::mutex> l(pl.mu);
    kept.swap(pl.kept);
    pl.stats.kept_bytes = 0;
  }
  for (auto &[mapped, ps] : kept)
    for (void *p : ps) munmap(p, mapped);
}

}  // namespace loom::runtime::cpu
