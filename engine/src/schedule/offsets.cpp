#include "schedule/offsets.h"

#include <functional>
#include <limits>
#include <unordered_map>

#include "uop/graph.h"

namespace loom::schedule {

using uop::Op;
using uop::UOp;
using uop::UOpRef;

namespace {

constexpr int64_t kNone = std::numeric_limits<int64_t>::max();

// The lowest element a tracker's bottom view addresses; kNone when it
// addresses none.
int64_t lowest(const shape::ShapeTracker &st) {
  const shape::View &v = st.views.front();
  if (v.numel() == 0 || v.empty()) return kNone;
  return v.index_bounds().first;
}

shape::ShapeTracker moved(shape::ShapeTracker st, int64_t shift) {
  st.views.front().offset -= shift;
  return st;
}

}  // namespace

uop::UOpRef shift_offsets(const uop::UOpRef &ast, size_t slots, shape::PoolVector<int64_t> &shifts) {
  std::vector<int64_t> low(slots, kNone);
  std::vector<bool> pinned(slots, false);  // no shift
  auto see = [&](int64_t slot, int64_t at) {
    int64_t &l = low[static_cast<size_t>(slot)];
    l = std::min(l, at);
  };
  for (const UOpRef &u : uop::toposort(ast)) {
    if (u->op == Op::View && u->src[0]->op == Op::DefineGlobal)
      see(u->src[0]->arg_as<int64_t>(), lowest(u->arg_as<shape::ShapeTracker>()));
    if (u->op != Op::Store) continue;
    const int64_t out = u->src[0]->arg_as<int64_t>();
    if (const auto *st = std::get_if<shape::ShapeTracker>(&u->arg)) {
      see(out, lowest(*st));
    } else {
      const auto &w = u->arg_as<uop::WriteArg>();
      if (w.axis >= 0) pinned[static_cast<size_t>(out)] = true;  // the index picks coordinates outside the view
      see(out, lowest(w.view));
    }
  }
  shifts.assign(slots, 0);
  bool any = false;
  for (size_t s = 0; s < slots; s++) {
    if (pinned[s] || low[s] == kNone || low[s] < kShiftUnit) continue;
    shifts[s] = low[s] / kShiftUnit * kShiftUnit;
    any = true;
  }
  if (!any) return ast;
  std::unordered_map<const UOp *, UOpRef> memo;
  std::function<UOpRef(const UOpRef &)> rewrite = [&](const UOpRef &u) -> UOpRef {
    if (u->op == Op::View && u->src[0]->op == Op::DefineGlobal) {
      const int64_t s = shifts[static_cast<size_t>(u->src[0]->arg_as<int64_t>())];
      return s ? UOp::make(Op::View, u->dtype, u->src, moved(u->arg_as<shape::ShapeTracker>(), s)) : u;
    }
    if (u->op != Op::Store) return nullptr;
    std::vector<UOpRef> src;
    for (auto &x : u->src) src.push_back(uop::replace_nodes(x, rewrite, memo));
    const int64_t s = shifts[static_cast<size_t>(u->src[0]->arg_as<int64_t>())];
    uop::Arg arg = u->arg;
    if (auto *st = std::get_if<shape::ShapeTracker>(&arg)) *st = moved(*st, s);
    else std::get<uop::WriteArg>(arg).view = moved(std::get<uop::WriteArg>(arg).view, s);
    return UOp::make(Op::Store, u->dtype, std::move(src), std::move(arg));
  };
  return uop::replace_nodes(ast, rewrite, memo);
}

}  // namespace loom::schedule
