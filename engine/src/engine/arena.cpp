#include "engine/arena.h"

#include <algorithm>

#include "engine/realize.h"
#include "uop/node_map.h"

namespace loom::engine {

// Largest first, each at the lowest offset clear of every buffer placed
// before it whose uses overlap its own (in use at a common item): the large
// ones pack together and the small fill the gaps, close to the most bytes
// live at once.
std::vector<size_t> plan_arena(const std::vector<ArenaUse> &uses, size_t &total) {
  std::vector<size_t> order(uses.size());
  for (size_t k = 0; k < order.size(); k++) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return uses[a].bytes > uses[b].bytes; });
  struct Placed {
    size_t begin, end, first, last;
  };
  std::vector<Placed> placed;  // by offset
  std::vector<size_t> offsets(uses.size());
  total = 0;
  for (size_t k : order) {
    const ArenaUse &u = uses[k];
    const size_t bytes = (std::max<size_t>(u.bytes, 1) + kArenaAlign - 1) / kArenaAlign * kArenaAlign;
    size_t at = 0;
    for (const Placed &p : placed) {
      if (p.last < u.first || u.last < p.first) continue;  // never in use together
      if (p.begin >= at + bytes) break;
      at = std::max(at, p.end);
    }
    const Placed mine{at, at + bytes, u.first, u.last};
    placed.insert(std::upper_bound(placed.begin(), placed.end(), mine,
                                   [](const Placed &a, const Placed &b) { return a.begin < b.begin; }),
                  mine);
    offsets[k] = at;
    total = std::max(total, at + bytes);
  }
  return offsets;
}

size_t place_transients(const std::vector<ExecItem> &items) {
  uop::NodeMap<size_t> last_read;
  for (size_t i = 0; i < items.size(); i++)
    for (const auto &b : items[i].release) last_read[b.get()] = i;
  if (last_read.size() == 0) return 0;
  std::vector<uop::Buffer *> placed;
  std::vector<ArenaUse> uses;
  uop::NodeSet seen;
  for (size_t i = 0; i < items.size(); i++)
    for (const auto &b : items[i].bufs) {
      if (b->allocated() || !seen.insert(b.get())) continue;
      const size_t *last = last_read.find(b.get());
      if (!last || *last < i) continue;
      placed.push_back(b.get());
      uses.push_back({i, *last, static_cast<size_t>(b->size) * itemsize(b->dtype)});
    }
  if (placed.empty()) return 0;
  size_t total = 0;
  const std::vector<size_t> offsets = plan_arena(uses, total);
  const std::shared_ptr<void> arena = allocate_tracked(total);
  for (size_t k = 0; k < placed.size(); k++)
    placed[k]->mem = std::shared_ptr<void>(arena, static_cast<char *>(arena.get()) + offsets[k]);
  stats().buffers_allocated += static_cast<int64_t>(placed.size());
  return placed.size();
}

}  // namespace loom::engine
