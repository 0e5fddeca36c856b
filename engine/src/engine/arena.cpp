#include "engine/arena.h"

#include <algorithm>
#include <utility>

#include "engine/realize.h"
#include "uop/node_map.h"

namespace loom::engine {

// Largest first, each at the lowest offset clear of every buffer placed
// before it whose uses overlap its own (in use at a common item): the large
// ones pack together and the small fill the gaps, close to the most bytes
// live at once. Each item lists the buffers placed so far that are in use
// at it, so a buffer is checked only against those it overlaps.
std::vector<size_t> plan_arena(const std::vector<ArenaUse> &uses, size_t &total) {
  const size_t n = uses.size();
  std::vector<size_t> order(n), offsets(n), ends(n);
  size_t items = 0;
  for (size_t k = 0; k < n; k++) {
    order[k] = k;
    items = std::max(items, uses[k].last + 1);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return uses[a].bytes > uses[b].bytes; });
  // Per item, the buffers placed so far that are in use at it: slots
  // [at[t], at[t] + count[t]) of one array, room for all the buffers in use at it.
  std::vector<size_t> at(items + 1, 0), count(items, 0);
  for (const ArenaUse &u : uses)
    for (size_t t = u.first; t <= u.last; t++) at[t + 1]++;
  for (size_t t = 0; t < items; t++) at[t + 1] += at[t];
  std::vector<size_t> in_use(at[items]);
  std::vector<size_t> seen_for(n, n);           // the buffer being placed when a buffer was last gathered
  std::vector<std::pair<size_t, size_t>> near;  // the overlapping placed buffers' [begin, end)
  total = 0;
  for (size_t k : order) {
    const ArenaUse &u = uses[k];
    near.clear();
    for (size_t t = u.first; t <= u.last; t++)
      for (size_t i = at[t]; i < at[t] + count[t]; i++)
        if (const size_t j = in_use[i]; std::exchange(seen_for[j], k) != k) near.push_back({offsets[j], ends[j]});
    std::sort(near.begin(), near.end());
    const size_t bytes = (std::max<size_t>(u.bytes, 1) + kArenaAlign - 1) / kArenaAlign * kArenaAlign;
    size_t offset = 0;
    for (const auto &[begin, end] : near) {
      if (begin >= offset + bytes) break;
      offset = std::max(offset, end);
    }
    offsets[k] = offset;
    ends[k] = offset + bytes;
    for (size_t t = u.first; t <= u.last; t++) in_use[at[t] + count[t]++] = k;
    total = std::max(total, ends[k]);
  }
  return offsets;
}

namespace {
struct RememberedPlan {
  std::vector<ArenaUse> uses;
  std::vector<size_t> offsets;
  size_t total = 0;
};
constexpr size_t kRememberedPlans = 4;
thread_local RememberedPlan remembered[kRememberedPlans];
thread_local size_t next_slot = 0, plans_made = 0;
}  // namespace

const std::vector<size_t> &plan_arena_cached(const std::vector<ArenaUse> &uses, size_t &total) {
  for (const RememberedPlan &p : remembered)
    if (!p.uses.empty() && p.uses == uses) {
      total = p.total;
      return p.offsets;
    }
  RememberedPlan &p = remembered[next_slot];
  next_slot = (next_slot + 1) % kRememberedPlans;
  p.uses.clear();  // a failed plan leaves the slot empty
  p.offsets = plan_arena(uses, p.total);
  p.uses = uses;
  ++plans_made;
  total = p.total;
  return p.offsets;
}

size_t arena_plans_made() { return plans_made; }

Placement place_transients(const std::vector<ExecItem> &items) {
  Placement out;
  uop::NodeMap<size_t> last_read;
  for (size_t i = 0; i < items.size(); i++)
    for (const auto &b : items[i].release) last_read[b.get()] = i;
  if (last_read.size() == 0) return out;
  for (size_t i = 0; i < items.size(); i++)
    for (const auto &b : items[i].release)
      if (b->allocated() && *last_read.find(b.get()) == i) out.others.push_back({i, b.get()});
  std::vector<ArenaUse> uses;
  uop::NodeSet seen;
  for (size_t i = 0; i < items.size(); i++)
    for (const auto &b : items[i].bufs) {
      if (b->allocated() || !seen.insert(b.get())) continue;
      const size_t *last = last_read.find(b.get());
      if (!last || *last < i) continue;
      out.placed.push_back(b.get());
      out.last = std::max(out.last, *last);
      uses.push_back({i, *last, static_cast<size_t>(b->size) * itemsize(b->dtype)});
    }
  if (out.placed.empty()) return out;
  size_t total = 0;
  const std::vector<size_t> &offsets = plan_arena_cached(uses, total);
  const std::shared_ptr<void> arena = allocate_tracked(total);
  for (size_t k = 0; k < out.placed.size(); k++)
    out.placed[k]->mem = std::shared_ptr<void>(arena, static_cast<char *>(arena.get()) + offsets[k]);
  stats().buffers_allocated += static_cast<int64_t>(out.placed.size());
  return out;
}

}  // namespace loom::engine
