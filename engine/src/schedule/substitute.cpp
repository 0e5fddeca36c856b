#include "schedule/substitute.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "uop/graph.h"
#include "uop/node_map.h"

namespace loom::schedule {

using uop::NodeMap;
using uop::Op;
using uop::UOp;

namespace {

// Lazy nodes already computed by an earlier realize, so a graph that still
// refers to them reads the buffer instead of recomputing.
struct RealizedCache {
  std::mutex mu;
  std::unordered_map<const UOp *, std::pair<std::weak_ptr<const UOp>, UOpRef>> map;
};
RealizedCache &realized() {
  static auto *c = new RealizedCache();
  return *c;
}

// The realized buffer view of each node of `order` (null where none), under one lock.
std::vector<UOpRef> lookup_realized(const std::vector<const UOpRef *> &order) {
  std::vector<UOpRef> out(order.size());
  auto &c = realized();
  std::lock_guard<std::mutex> l(c.mu);
  if (c.map.empty()) return out;
  for (size_t i = 0; i < order.size(); i++) {
    const UOpRef &u = *order[i];
    if (u->op == Op::Buffer || u->op == Op::Const) continue;
    auto it = c.map.find(u.get());
    if (it != c.map.end() && it->second.first.lock() == u) out[i] = it->second.second;
  }
  return out;
}

}  // namespace

void remember_realized(const UOpRef &u, const UOpRef &buf_view) {
  auto &c = realized();
  std::lock_guard<std::mutex> l(c.mu);
  c.map[u.get()] = {u, buf_view};
}

void forget_dead() {
  auto &c = realized();
  std::lock_guard<std::mutex> l(c.mu);
  for (auto it = c.map.begin(); it != c.map.end();) it = it->second.first.expired() ? c.map.erase(it) : std::next(it);
}

UOpRef substitute_realized(const std::vector<const UOpRef *> &order, Rebuilt &rebuilt) {
  const std::vector<UOpRef> hits = lookup_realized(order);
  if (std::all_of(hits.begin(), hits.end(), [](const UOpRef &h) { return !h; })) return *order.back();
  NodeMap<UOpRef> memo;
  for (size_t i = 0; i < order.size(); i++) {
    const UOpRef &u = *order[i];
    UOpRef r = hits[i];
    if (!r) {
      std::vector<UOpRef> src;
      bool changed = false;
      for (auto &s : u->src) {
        src.push_back(*memo.find(s.get()));
        changed |= src.back() != s;
      }
      r = changed ? u->with_src(src) : u;
      // A VIEW whose (non-view) source was realized composes with the buffer's view.
      if (r->op == Op::View && r->src[0]->op == Op::View && u->src[0]->op != Op::View)
        r = uop::view(r->src[0], r->arg_as<shape::ShapeTracker>().compose_onto(uop::tracker_of(r->src[0])));
    }
    if (r != u) rebuilt.push_back({u, r});
    memo[u.get()] = r;
  }
  return *memo.find(order.back()->get());
}

}  // namespace loom::schedule
