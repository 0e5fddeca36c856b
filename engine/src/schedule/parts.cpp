#include "schedule/parts.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <map>

#include "uop/graph.h"

namespace loom::schedule {

using uop::Op;
using uop::UOp;

Split::Split(const UOpRef &ast) : key(ast) {
  for (auto &u : uop::toposort(ast))
    if (u->op == Op::DefineGlobal) slots = std::max(slots, static_cast<size_t>(u->arg_as<int64_t>()) + 1);
}

int64_t Split::add_scratch(DType dt, int64_t elements) {
  scratch.emplace_back(dt, elements);
  return static_cast<int64_t>(slots + scratch.size() - 1);
}

UOpRef only_reduction(const UOpRef &ast) {
  const UOpRef &store = ast->src[0];
  if (ast->src.size() != 1 || !std::holds_alternative<shape::ShapeTracker>(store->arg)) return nullptr;
  UOpRef r;
  for (auto &u : uop::toposort(store->src[1])) {
    if (u->op == Op::Scan || u->op == Op::Sort) return nullptr;
    if (u->op == Op::ReduceAxis) {
      if (r) return nullptr;
      r = u;
    }
  }
  return r;
}

UOpRef global(DType dt, int64_t slot) { return UOp::make(Op::DefineGlobal, dt, {}, slot); }

std::string dims_name(const char *prefix, const std::vector<int64_t> &dims) {
  std::string n = prefix;
  for (int64_t d : dims) n += "_" + std::to_string(d);
  if (dims.empty()) n += "_0d";
  return n;
}

Part make_part(const UOpRef &value, int64_t out, DType out_dtype, const shape::ShapeTracker &st, std::string name) {
  std::vector<int64_t> used;
  for (auto &u : uop::toposort(value))
    if (u->op == Op::DefineGlobal) used.push_back(u->arg_as<int64_t>());
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  Part part{nullptr, std::move(name), {out}};
  std::map<int64_t, int64_t> slot_of;
  for (int64_t r : used) {
    if (r == out) {
      slot_of[r] = 0;
      continue;
    }
    slot_of[r] = static_cast<int64_t>(part.refs.size());
    part.refs.push_back(r);
  }
  std::unordered_map<const UOp *, UOpRef> memo;
  UOpRef v = uop::replace_nodes(
      value,
      [&](const UOpRef &u) -> UOpRef {
        return u->op == Op::DefineGlobal ? global(u->dtype, slot_of.at(u->arg_as<int64_t>())) : nullptr;
      },
      memo);
  part.ast = UOp::make(Op::Sink, DType::Bool, {UOp::make(Op::Store, DType::Bool, {global(out_dtype, 0), v}, st)});
  return part;
}

std::shared_ptr<const Split> SplitMemo::get(const UOpRef &ast) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = map_.find(ast.get()); it != map_.end()) return it->second;
  if (map_.size() > 8192) map_.clear();  // ASTs with baked constants come and go
  auto split = std::make_shared<const Split>(analyze_(ast));
  map_[ast.get()] = split;
  return split;
}

void SplitMemo::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  map_.clear();
}

void apply_splits(Schedule &sched, SplitMemo &memo) {
  // Most schedules split nothing: their items stay where they are.
  size_t first = 0;
  std::shared_ptr<const Split> split;
  for (; first < sched.items.size(); first++)
    if (!(split = memo.get(sched.items[first].ast))->parts.empty()) break;
  if (first == sched.items.size()) return;
  std::vector<ScheduleItem> items;
  items.reserve(sched.items.size() + split->parts.size());
  std::move(sched.items.begin(), sched.items.begin() + static_cast<std::ptrdiff_t>(first), std::back_inserter(items));
  for (size_t i = first; i < sched.items.size(); i++) {
    ScheduleItem &item = sched.items[i];
    if (i > first) split = memo.get(item.ast);
    if (split->parts.empty()) {
      items.push_back(std::move(item));
      continue;
    }
    std::vector<std::shared_ptr<uop::Buffer>> scratch;
    for (const auto &[dt, n] : split->scratch) {
      scratch.push_back(uop::Buffer::create(dt, n));
      sched.transient.push_back(scratch.back());
    }
    const auto slots = static_cast<int64_t>(split->slots);
    for (const Part &p : split->parts) {
      ScheduleItem it{p.ast, {}, item.vars, {}, p.name.empty() ? item.name : p.name};  // a part keeps the item's DEFINE_VAR slots
      for (int64_t ref : p.refs) {
        const bool own = ref < slots;
        it.bufs.push_back(own ? item.bufs[static_cast<size_t>(ref)] : scratch[static_cast<size_t>(ref - slots)]);
        it.shifts.push_back(own ? item.shifts[static_cast<size_t>(ref)] : 0);
      }
      items.push_back(std::move(it));
    }
  }
  sched.items = std::move(items);
}

}  // namespace loom::schedule
