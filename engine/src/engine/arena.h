// One allocation for the buffers a run of kernels both creates and drops:
// the intermediates of a realize that no one can ask for afterwards (the
// schedule's `transient`). Their places in it are planned before the first
// launch, from when each is first written and last read, so buffers whose
// uses overlap never share bytes and the others reuse each other's; the run
// then neither allocates nor frees per kernel. (Allocated and freed one by
// one between launches, each cost microseconds in a training step: the
// kernel before had pushed the allocator's tables out of the caches.)
#pragma once
#include <cstddef>
#include <utility>
#include <vector>

#include "uop/buffer.h"

namespace loom::engine {

struct ExecItem;

// Gives each buffer that `items` use while it is unallocated and release
// after their last use (ExecItem::release) its place in one new allocation,
// which its `mem` keeps alive (the allocation goes back to the device when
// the last of them is released). Says when run() lets each go: the placed
// ones together after the last item that reads one of them (releasing each
// after its own last read would give nothing back sooner), a buffer released
// but allocated already (not placed) after its own last read.
struct Placement {
  std::vector<uop::Buffer *> placed;
  size_t last = 0;  // the last item reading a placed buffer
  std::vector<std::pair<size_t, uop::Buffer *>> others;  // (its last reader, buffer), in item order
};
Placement place_transients(const std::vector<ExecItem> &items);

// Byte offsets (multiples of kArenaAlign) for buffers of `bytes` used from
// item `first` through item `last`, where no two whose uses overlap share a
// byte. `total` gets the bytes they span.
struct ArenaUse {
  size_t first, last, bytes;
  bool operator==(const ArenaUse &) const = default;
};
inline constexpr size_t kArenaAlign = 256;  // a CUDA allocation's alignment; more than any vector load needs
std::vector<size_t> plan_arena(const std::vector<ArenaUse> &uses, size_t &total);
// plan_arena, remembered for the last few distinct lists of uses on this
// thread: a training loop realizes the same schedules step after step, and
// their transients' sizes and lifetimes repeat exactly. The offsets stay
// valid until the next call on this thread. arena_plans_made() counts the
// plans this thread made (not found remembered), for tests.
const std::vector<size_t> &plan_arena_cached(const std::vector<ArenaUse> &uses, size_t &total);
size_t arena_plans_made();

}  // namespace loom::engine
