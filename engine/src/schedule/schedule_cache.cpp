#include "schedule/schedule_cache.h"

#include <mutex>
#include <unordered_map>

#include "schedule/offsets.h"
#include "uop/graph.h"
#include "uop/node_map.h"

namespace loom::schedule {

using uop::Op;

namespace {

size_t mix(size_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ull; }

struct Entry {
  std::vector<int64_t> code;
  std::vector<uop::Arg> args;  // monostate for BUFFER nodes and runtime scalars
  std::vector<int64_t> donated;
  RefCounts refs;  // the reference counts its donations were last decided under (empty: none)
  Kept kept;       // the lifetimes decided under `refs` (empty: not yet)
  std::shared_ptr<const ScheduleTemplate> schedule;
};

// Bounded by the number of distinct graph structures, at most kMaxEntries:
// past that the cache starts over (a program cycling through more structures
// than that schedules some of them afresh).
constexpr size_t kMaxEntries = 4096;

struct Cache {
  std::mutex mu;
  std::unordered_multimap<size_t, Entry> map;
};
Cache &cache() {
  static auto *c = new Cache();
  return *c;
}

// The same structure (donations aside).
bool same_structure(const Entry &e, const GraphKey &k) {
  if (e.code != k.code) return false;
  for (size_t i = 0; i < k.args.size(); i++)
    if (k.args[i] && !uop::arg_equal(e.args[i], *k.args[i])) return false;
  return true;
}

// The first entry of the key's structure that `match` accepts, or null. The cache's lock is held.
template <typename Match>
Entry *find_entry(Cache &c, const GraphKey &key, Match match) {
  auto [lo, hi] = c.map.equal_range(key.hash);
  for (auto it = lo; it != hi; ++it)
    if (match(it->second) && same_structure(it->second, key)) return &it->second;
  return nullptr;
}

// The entry stored under an equal key (structure and donations), or null.
Entry *find_entry(Cache &c, const GraphKey &key) {
  return find_entry(c, key, [&](const Entry &x) { return x.donated == key.donated; });
}

}  // namespace

namespace {

// BUFFER nodes whose views must key their starts as they are: the base of a
// WRITE (its stores may be pinned to the buffer's start, schedule/offsets.h)
// and buffers a node reads whole, not through a view.
uop::NodeSet absolute_buffers(const std::vector<const UOpRef *> &order) {
  uop::NodeSet out;
  for (const UOpRef *r : order) {
    const uop::UOp *u = r->get();
    if (u->op == Op::Write) {
      const uop::UOp *b = u->src[0].get();
      while (b->op == Op::View) b = b->src[0].get();
      if (b->op == Op::Buffer) out.insert(b);
    }
    if (u->op != Op::View)
      for (auto &s : u->src)
        if (s->op == Op::Buffer) out.insert(s.get());
  }
  return out;
}

}  // namespace

GraphKey graph_key(const std::vector<const UOpRef *> &order) {
  GraphKey k;
  const uop::NodeSet absolute = absolute_buffers(order);
  uop::NodeMap<int64_t> base;  // a relative buffer's base
  uop::NodeMap<int64_t> position;
  position.reserve(order.size());
  k.code.reserve(order.size() * 5);
  k.args.reserve(order.size());
  size_t h = 0xcbf29ce484222325ull;
  auto put = [&](int64_t v) {
    k.code.push_back(v);
    h = mix(h, static_cast<uint64_t>(v));
  };
  for (size_t i = 0; i < order.size(); i++) {
    const uop::UOp *u = order[i]->get();
    position[u] = static_cast<int64_t>(i);
    put(static_cast<int64_t>(u->op) << 16 | static_cast<int64_t>(u->dtype));
    k.writes |= u->op == Op::Write;
    put(static_cast<int64_t>(u->src.size()));
    for (auto &s : u->src) put(*position.find(s.get()));
    if (u->op == Op::Buffer) {
      put(u->arg_as<uop::BufferArg>().buffer->size);
      k.args.push_back(nullptr);
    } else if (u->is_param()) {
      k.args.push_back(nullptr);
    } else if (u->op == Op::View && u->src[0]->op == Op::Buffer && !absolute.contains(u->src[0].get())) {
      shape::ShapeTracker st = u->arg_as<shape::ShapeTracker>();
      int64_t &offset = st.views.front().offset;
      auto [b, fresh] = base.insert(u->src[0].get());
      if (fresh) {
        *b = offset - ((offset % kShiftUnit) + kShiftUnit) % kShiftUnit;
        k.bases.push_back({*position.find(u->src[0].get()), *b});
      }
      offset -= *b;
      k.owned.emplace_back(std::move(st));
      h = mix(h, uop::arg_hash(k.owned.back()));
      k.args.push_back(&k.owned.back());
    } else {
      h = mix(h, u->arg_digest);
      k.args.push_back(&u->arg);
    }
  }
  k.hash = h;
  return k;
}

RefCounts ref_counts(const std::vector<const UOpRef *> &order) {
  RefCounts refs(order.size());
  for (size_t i = 0; i < order.size(); i++) refs[i] = order[i]->use_count();
  return refs;
}

std::shared_ptr<const ScheduleTemplate> find_template(const GraphKey &key) {
  auto &c = cache();
  std::lock_guard<std::mutex> l(c.mu);
  const Entry *e = find_entry(c, key);
  return e ? e->schedule : nullptr;
}

std::optional<Decided> find_decided(const GraphKey &key, const RefCounts &refs) {
  auto &c = cache();
  std::lock_guard<std::mutex> l(c.mu);
  const Entry *e = find_entry(c, key, [&](const Entry &x) { return x.refs == refs; });
  return e ? std::optional<Decided>(Decided{e->donated, e->schedule, e->kept}) : std::nullopt;
}

void remember_decision(const GraphKey &key, RefCounts refs, Kept kept) {
  auto &c = cache();
  std::lock_guard<std::mutex> l(c.mu);
  if (Entry *e = find_entry(c, key)) {
    e->refs = std::move(refs);
    e->kept = std::move(kept);
  }
}

void store_template(const GraphKey &key, std::shared_ptr<const ScheduleTemplate> t, RefCounts refs) {
  Entry e{key.code, {}, key.donated, std::move(refs), {}, std::move(t)};
  e.args.reserve(key.args.size());
  for (const uop::Arg *a : key.args) e.args.push_back(a ? *a : uop::Arg{});
  auto &c = cache();
  std::lock_guard<std::mutex> l(c.mu);
  if (c.map.size() >= kMaxEntries) c.map.clear();
  c.map.emplace(key.hash, std::move(e));
}

size_t cached_schedules() {
  std::lock_guard<std::mutex> l(cache().mu);
  return cache().map.size();
}

void clear_schedule_cache() {
  std::lock_guard<std::mutex> l(cache().mu);
  cache().map.clear();
}

}  // namespace loom::schedule
