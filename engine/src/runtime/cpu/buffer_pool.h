// The CPU device's buffer memory. Large buffers are their own mappings (zero
// pages from the kernel, given back on free: through malloc, a training loop's
// churn of large buffers left glibc's heap growing). Freed large buffers are
// kept by size and handed out again, so a loop that computes the same shapes
// every step neither page-faults its memory in again nor has the kernel zero
// it: a kernel writes every element of its output, so contents are
// unspecified. What is kept is bounded (kPoolBytes); past that, freed
// mappings go back to the system.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace loom::runtime::cpu {

struct PoolStats {
  int64_t system_allocations = 0;  // mappings and heap blocks asked of the system
  int64_t reused = 0;              // allocations served from kept buffers
  size_t kept_bytes = 0;           // freed memory held for reuse now
};

inline constexpr size_t kMapBytes = size_t{1} << 17;  // from this size on, a buffer is its own mapping
inline constexpr size_t kPoolBytes = size_t{1} << 30;  // at most this much freed memory is kept

// `bytes` bytes aligned to 64, contents unspecified; freed when the last owner drops it.
std::shared_ptr<void> allocate_buffer(size_t bytes);
PoolStats pool_stats();
// Gives every kept buffer back to the system.
void trim_pool();

}  // namespace loom::runtime::cpu
