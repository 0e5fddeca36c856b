#include "schedule/substitute.h"

#include <algorithm>
#include <mutex>

#include "uop/graph.h"
#include "uop/node_map.h"

namespace loom::schedule {

using uop::NodeMap;
using uop::Op;
using uop::UOp;

namespace {

// Guards UOp::realized.
std::mutex &realized_mu() {
  static auto *mu = new std::mutex();
  return *mu;
}

// The realized buffer view of each node of `order` (null where none), under one lock.
std::vector<UOpRef> lookup_realized(const std::vector<const UOpRef *> &order) {
  std::vector<UOpRef> out(order.size());
  std::lock_guard<std::mutex> l(realized_mu());
  for (size_t i = 0; i < order.size(); i++) out[i] = (*order[i])->realized;
  return out;
}

}  // namespace

void remember_realized(const UOpRef &u, const UOpRef &buf_view) {
  // A VIEW (the source of a copy point, stored row-major for the copy) keeps
  // its own strides for the tensors holding it: its buffer is not its value.
  if (u == buf_view || u->op == Op::Buffer || u->op == Op::Const || u->op == Op::View) return;
  std::lock_guard<std::mutex> l(realized_mu());
  u->realized = buf_view;
}

UOpRef substitute_realized(const std::vector<const UOpRef *> &order, Rebuilt &rebuilt) {
  const std::vector<UOpRef> hits = lookup_realized(order);
  if (std::all_of(hits.begin(), hits.end(), [](const UOpRef &h) { return !h; })) return *order.back();
  NodeMap<UOpRef> memo;
  memo.reserve(order.size());
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
