#include "codegen/lowerer.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "codegen/affine.h"
#include "codegen/indexing.h"
#include "loom/error.h"
#include "uop/graph.h"
#include "uop/symbolic.h"

namespace loom::codegen {

using uop::Op;
using uop::UOp;

namespace {

constexpr int64_t kTwoLevelSum = 1024;
constexpr int64_t kLaneSumMin = 64;

// How many elements each output of a reduction folds.
int64_t reduced_count(const UOp &reduce) {
  const Shape &in = uop::shape_of(reduce.src[0]);
  int64_t n = 1;
  for (auto a : reduce.arg_as<uop::ReduceArg>().axes) n *= in[static_cast<size_t>(a)];
  return n;
}

// 0 <= i < n: where an index read from memory addresses something.
UOpRef in_range(const UOpRef &i, int64_t n) {
  return uop::alu(Op::And, uop::alu(Op::CmpLe, UOp::const_int(0), i), uop::alu(Op::CmpLt, i, UOp::const_int(n)));
}

class Lowerer {
 public:
  UOpRef range(int64_t size) {
    if (size == 1) return UOp::const_int(0);
    return UOp::make(Op::Range, DType::Int64, {UOp::const_int(size)}, next_range_++);
  }
  // Set while an upcast group is evaluated: each element's reduction runs over
  // the same loop variables, so the group's reductions share one loop nest.
  bool share_reduce_ranges = false;
  // Reductions that unrolled_reduction() accepts fold in registers.
  bool fold_short = false;
  // Float sums that splits_into_lanes() accepts add in this many interleaved
  // partials (1: none); each sum's partials, in lane order, are recorded.
  int64_t sum_lanes = 1;
  std::vector<std::vector<UOpRef>> lane_sums;
  bool two_level = true;  // float sums of kTwoLevelSum terms or more add in two levels
  // Nodes whose value is given wherever they are read (value_at's).
  std::unordered_map<const UOp *, UOpRef> given;

  // The value of AST node `u` at logical index `idx`. `gate` is true where the
  // element is actually used: loads under a masked view read only when it holds,
  // so an index computed for a padded (invalid) element is never dereferenced.
  UOpRef eval(const UOpRef &u, const std::vector<UOpRef> &idx, const UOpRef &gate) {
    std::vector<const UOp *> key{u.get(), gate.get()};
    for (auto &i : idx) key.push_back(i.get());
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    UOpRef r = eval_uncached(u, idx, gate);
    memo_[key] = r;
    keep_.push_back(r);
    keep_.push_back(gate);
    keep_.insert(keep_.end(), idx.begin(), idx.end());
    return r;
  }

 private:
  UOpRef eval_uncached(const UOpRef &u, const std::vector<UOpRef> &idx, const UOpRef &gate) {
    if (auto it = given.find(u.get()); it != given.end()) return it->second;
    switch (u->op) {
      case Op::Const: case Op::DefineVar: return u;
      case Op::View: {
        const auto &st = u->arg_as<shape::ShapeTracker>();
        const UOpRef &src = u->src[0];
        const bool buffer = src->op == Op::DefineGlobal;
        std::vector<UOpRef> coords;
        UOpRef flat, valid;
        if (buffer) std::tie(flat, valid) = view_index(st, idx);
        else std::tie(coords, valid) = view_coords(st, idx, uop::shape_of(src));
        UOpRef zero = UOp::const_(u->dtype, 0);
        bool always = valid->is_const() && valid->const_value() != 0;
        bool never = valid->is_const() && valid->const_value() == 0;
        if (never) return zero;
        UOpRef inner_gate = uop::simplify(uop::alu(Op::And, gate, valid));
        if (buffer) {
          std::vector<UOpRef> s{src, flat};
          if (!(inner_gate->is_const() && inner_gate->const_value() != 0)) s.push_back(inner_gate);
          return UOp::make(Op::Load, u->dtype, s);
        }
        UOpRef v = src->op == Op::Const || src->op == Op::DefineVar ? src : eval(src, coords, inner_gate);
        return always ? v : uop::where(valid, v, zero);
      }
      case Op::ReduceAxis: {
        auto &ra = u->arg_as<uop::ReduceArg>();
        const Shape &in = uop::shape_of(u->src[0]);
        for (auto a : ra.axes)
          if (in[a] == 0) return identity(ra.op, u->dtype);
        if (fold_short && unrolled_reduction(*u)) return unrolled(u, idx, gate);
        const int64_t lanes = splits_into_lanes(*u, sum_lanes) ? sum_lanes : 1;
        const ReduceLoops loops = share_reduce_ranges ? shared_loops(u, lanes) : reduce_loops(*u, lanes);
        std::vector<UOpRef> partials;
        for (int64_t j = 0; j < lanes; j++) partials.push_back(reduce_lane(u, loops, idx, gate, lanes, j));
        if (lanes > 1) lane_sums.push_back(partials);
        UOpRef total = partials[0];
        for (size_t j = 1; j < partials.size(); j++) total = uop::alu(Op::Add, total, partials[j]);
        return total;
      }
      case Op::Gather: {  // an indexed load: the index replaces one coordinate
        const int64_t axis = u->arg_as<int64_t>();
        const int64_t n = uop::shape_of(u->src[0])[static_cast<size_t>(axis)];
        UOpRef i = eval(u->src[1], idx, gate);
        UOpRef valid = in_range(i, n);
        std::vector<UOpRef> inner = idx;
        inner[static_cast<size_t>(axis)] = i;
        UOpRef v = eval(u->src[0], inner, uop::simplify(uop::alu(Op::And, gate, valid)));
        return v->op == Op::Load ? v : uop::where(valid, v, UOp::const_(u->dtype, 0));
      }
      case Op::Scan: {  // the kernel's root: its axis is the innermost output loop
        const int64_t axis = u->arg_as<uop::ReduceArg>().axes.at(0);
        UOpRef v = eval(u->src[0], idx, gate);
        const UOpRef &r = idx[static_cast<size_t>(axis)];
        if (r->op != Op::Range) return v;  // a scan over one element
        return UOp::make(Op::Scan, u->dtype, {v, r}, uop::ReduceArg{u->arg_as<uop::ReduceArg>().op, {}});
      }
      case Op::Cast: {
        UOpRef x = eval(u->src[0], idx, gate);
        return UOp::make(Op::Cast, u->dtype, {x});
      }
      default: {
        LOOM_CHECK(uop::is_alu(u->op), std::string("cannot lower ") + uop::op_name(u->op));
        std::vector<UOpRef> s;
        for (auto &x : u->src) s.push_back(eval(x, idx, gate));
        return u->with_src(s);
      }
    }
  }

  // A short reduction folded in registers: its elements in loop order, a sum
  // from 0 as the loop's accumulator starts (so -0.0 sums to +0.0 alike).
  UOpRef unrolled(const UOpRef &u, const std::vector<UOpRef> &idx, const UOpRef &gate) {
    const auto &ra = u->arg_as<uop::ReduceArg>();
    const Shape &in = uop::shape_of(u->src[0]);
    UOpRef acc = ra.op == Op::Add ? UOp::const_(u->dtype, 0) : nullptr;
    std::vector<UOpRef> inner = idx;
    for (int64_t t = 0, n = reduced_count(*u); t < n; t++) {
      int64_t rest = t;
      for (size_t i = ra.axes.size(); i-- > 0;) {
        const int64_t m = in[static_cast<size_t>(ra.axes[i])];
        inner[static_cast<size_t>(ra.axes[i])] = UOp::const_int(rest % m);
        rest /= m;
      }
      const UOpRef v = eval(u->src[0], inner, gate);
      acc = acc ? uop::alu(ra.op, acc, v) : v;
    }
    return acc;
  }

  // A reduction's loops: each reduced axis's index, and the loop variables
  // of each level of the sum, outermost level first.
  struct ReduceLoops {
    std::vector<std::pair<int64_t, UOpRef>> index;
    std::vector<std::vector<UOpRef>> levels;
    // Split into lanes: the last axis's whole groups of lanes, and how many
    // lanes have a term past them (the axis's length modulo the lanes).
    int64_t groups = 0, tail = 0;
  };

  // A long floating-point sum adds in two levels: its innermost loops (about
  // sqrt(n) terms, an axis split where it crosses that) into a partial sum,
  // each partial into the total, so the rounding error grows with about
  // 2 sqrt(n) terms instead of n (torch's CPU sums cascade likewise). Other
  // reductions, and sums shorter than kTwoLevelSum, are one level. Split into
  // `lanes`, the loops run over the input's last axis divided by it.
  ReduceLoops reduce_loops(const UOp &u, int64_t lanes) {
    auto &ra = u.arg_as<uop::ReduceArg>();
    Shape in = uop::shape_of(u.src[0]);
    ReduceLoops loops;
    loops.tail = in.back() % lanes;
    loops.groups = in.back() /= lanes;
    // How many trailing terms of each axis the inner level takes (1: none).
    std::vector<int64_t> inner_part(ra.axes.size(), 1);
    if (loops.tail > 0) {  // the inner level: the last axis's groups, each lane's tail term after them
      for (size_t i = 0; i < ra.axes.size(); i++)
        if (ra.axes[i] + 1 == static_cast<int64_t>(in.size())) inner_part[i] = in.back();
    } else if (two_level && ra.op == Op::Add && is_float(u.dtype)) {
      std::vector<int64_t> sizes;
      for (auto a : ra.axes) sizes.push_back(in[a]);
      inner_part = sum_inner_level(sizes);
    }
    loops.levels.resize(2);
    for (size_t i = 0; i < ra.axes.size(); i++) {
      const int64_t m = in[ra.axes[i]], b = inner_part[i];
      const UOpRef outer = range(m / b), in_block = range(b);
      if (outer->op == Op::Range) loops.levels[0].push_back(outer);
      if (in_block->op == Op::Range) loops.levels[1].push_back(in_block);
      loops.index.push_back({ra.axes[i], b == 1 ? outer : b == m ? in_block : uop::simplify(outer * b + in_block)});
    }
    return loops;
  }

  // An upcast group's elements share each reduction's loops.
  const ReduceLoops &shared_loops(const UOpRef &u, int64_t lanes) {
    auto it = shared_loops_.find(u.get());
    if (it == shared_loops_.end()) it = shared_loops_.emplace(u.get(), reduce_loops(*u, lanes)).first;
    return it->second;
  }

  // Lane j of `lanes` of a reduction: the terms whose index along the input's
  // last axis is j modulo `lanes` (all of them when lanes is 1), folded over
  // the loops' levels, innermost first.
  UOpRef reduce_lane(const UOpRef &u, const ReduceLoops &loops, const std::vector<UOpRef> &idx, const UOpRef &gate,
                     int64_t lanes, int64_t j) {
    std::vector<UOpRef> inner = idx;
    for (auto &[axis, index] : loops.index) inner[static_cast<size_t>(axis)] = index;
    if (lanes > 1) inner.back() = uop::simplify(inner.back() * lanes + j);
    UOpRef v = eval(u->src[0], inner, gate);
    for (size_t level = loops.levels.size(); level-- > 0;) {
      if (!loops.levels[level].empty()) {
        std::vector<UOpRef> s{v};
        s.insert(s.end(), loops.levels[level].begin(), loops.levels[level].end());
        v = UOp::make(Op::Reduce, u->dtype, s, uop::ReduceArg{u->arg_as<uop::ReduceArg>().op, {}});
      }
      if (level + 1 == loops.levels.size() && loops.tail > 0) {
        // Every lane adds a term (0 past the axis's end), so the lanes stay alike for the vectorize pass.
        inner.back() = UOp::const_int(loops.groups * lanes + j);
        const UOpRef term = j < loops.tail ? eval(u->src[0], inner, gate) : UOp::const_(u->dtype, 0);
        v = UOp::make(Op::Add, u->dtype, {v, term});
      }
    }
    return v;
  }

  static UOpRef identity(Op op, DType dt) {
    switch (op) {
      case Op::Add: return UOp::const_(dt, 0);
      case Op::Mul: return UOp::const_(dt, 1);
      default: LOOM_CHECK(false, "max/min over an empty dim reached codegen");
    }
    return nullptr;
  }

  int64_t next_range_ = 0;
  std::map<const UOp *, ReduceLoops> shared_loops_;
  std::map<std::vector<const UOp *>, UOpRef> memo_;
  std::vector<UOpRef> keep_;
};

// Output loop variables for `shape`, each upcast axis counting groups of its
// amount; returns the index of each element of a group, the innermost upcast
// axis varying fastest.
std::vector<std::vector<UOpRef>> output_indices(Lowerer &l, const Shape &shape, const Upcast &up,
                                                std::vector<UOpRef> &out_ranges) {
  std::vector<UOpRef> idx;
  for (size_t d = 0; d < shape.size(); d++) {
    int64_t n = shape[d];
    for (auto [axis, amount] : up)
      if (axis == static_cast<int64_t>(d)) n /= amount;
    idx.push_back(l.range(n));
    if (idx.back()->op == Op::Range) out_ranges.push_back(idx.back());
  }
  std::vector<std::vector<UOpRef>> group{idx};
  for (auto [axis, amount] : up) {
    std::vector<std::vector<UOpRef>> next;
    const UOpRef outer = idx[static_cast<size_t>(axis)];
    for (auto &g : group)
      for (int64_t k = 0; k < amount; k++) {
        next.push_back(g);
        next.back()[static_cast<size_t>(axis)] = uop::simplify(outer * amount + k);
      }
    group = std::move(next);
  }
  return group;
}

// A Write's stores: one per element of the value, at the address the write's
// view gives (the index supplying one coordinate), skipped where the address
// is invalid; `acc` combines with the stored element. Runs serially, so
// duplicate addresses combine in order, deterministically (on a target with
// atomic adds, codegen/atomic_writes.h makes an adding Write parallel).
LoweredKernel lower_write(Lowerer &l, const UOpRef &store, const Upcast &up) {
  const auto &w = store->arg_as<uop::WriteArg>();
  const UOpRef &out = store->src[0];
  const Shape &shape = uop::shape_of(store->src[1]);
  LoweredKernel k;
  const UOpRef yes = UOp::const_int(1, DType::Bool);
  std::vector<UOpRef> stores;
  for (auto &idx : output_indices(l, shape, up, k.out_ranges)) {
    UOpRef value = l.eval(store->src[1], idx, yes);
    std::vector<UOpRef> coords = idx;
    UOpRef gate = yes;
    if (w.axis >= 0) {
      UOpRef i = l.eval(store->src[2], idx, yes);
      const int64_t n = w.view.shape()[static_cast<size_t>(w.axis)];
      gate = in_range(i, n);
      coords[static_cast<size_t>(w.axis)] = i;
    }
    auto [flat, valid] = view_index(w.view, coords);
    gate = uop::simplify(uop::alu(Op::And, gate, valid));
    const bool always = gate->is_const() && gate->const_value() != 0;
    if (w.acc) {
      std::vector<UOpRef> ls{out, flat};
      if (!always) ls.push_back(gate);
      value = uop::alu(*w.acc, UOp::make(Op::Load, out->dtype, ls), value);
    }
    std::vector<UOpRef> ss{out, flat, value};
    if (!always) ss.push_back(gate);
    stores.push_back(UOp::make(Op::Store, DType::Bool, ss));
  }
  k.sink = UOp::make(Op::Sink, DType::Bool, stores);
  k.serial = true;
  return k;
}

}  // namespace

bool unrolled_reduction(const UOp &reduce) {
  const DType d = reduce.dtype;
  if (reduce.arg_as<uop::ReduceArg>().op == Op::Mul || !(d == DType::Float32 || d == DType::Float64 || d == DType::Int64))
    return false;
  const int64_t n = reduced_count(reduce);
  return n >= 1 && n <= kUnrolledReduce;
}

Reductions reductions(const UOpRef &value, bool skip_short) {
  Reductions r;
  for (auto &x : uop::toposort(value)) {
    if (x->op != Op::ReduceAxis || (skip_short && unrolled_reduction(*x))) continue;
    r.count++;
    if (r.last && uop::shape_of(r.last->src[0]) != uop::shape_of(x->src[0])) r.one_input = false;
    for (auto &y : uop::toposort(x->src[0])) r.one_input = r.one_input && y->op != Op::ReduceAxis;
    r.last = x;
  }
  return r;
}

bool splits_into_lanes(const UOp &reduce, int64_t lanes) {
  const auto &ra = reduce.arg_as<uop::ReduceArg>();
  const Shape &in = uop::shape_of(reduce.src[0]);
  const bool last = !in.empty() && std::find(ra.axes.begin(), ra.axes.end(), static_cast<int64_t>(in.size()) - 1) != ra.axes.end();
  return lanes > 1 && ra.op == Op::Add && reduce.dtype == DType::Float32 && last && in.back() >= lanes &&
         reduced_count(reduce) >= kLaneSumMin;
}

namespace {

// `value` lowered over one loop variable per axis of `shape` (appended to idx).
UOpRef lowered(Lowerer &l, const UOpRef &value, const Shape &shape, std::vector<UOpRef> &idx) {
  for (int64_t n : shape) idx.push_back(l.range(n));
  return l.eval(value, idx, UOp::const_int(1, DType::Bool));
}

std::vector<UOpRef> loads_in(const UOpRef &u) {
  std::vector<UOpRef> loads;
  for (auto &x : uop::toposort(u))
    if (x->op == Op::Load) loads.push_back(x);
  return loads;
}

// Or-s into `uses` which of the loop variables `idx` the expression reads.
void mark_ranges(const UOpRef &u, const std::vector<UOpRef> &idx, std::vector<bool> &uses) {
  for (auto &x : uop::toposort(u))
    for (size_t d = 0; d < idx.size(); d++) uses[d] = uses[d] || (x == idx[d] && x->op == Op::Range);
}

}  // namespace

std::vector<std::vector<bool>> load_axes(const UOpRef &value, const Shape &shape) {
  Lowerer l;
  std::vector<UOpRef> idx;
  std::vector<std::vector<bool>> out;
  for (auto &u : loads_in(lowered(l, value, shape, idx))) {
    std::vector<bool> uses(shape.size(), false);
    mark_ranges(u->src[1], idx, uses);
    out.push_back(uses);
  }
  return out;
}

std::vector<bool> costly_axes(const UOpRef &value, const Shape &shape) {
  Lowerer l;
  std::vector<UOpRef> idx;
  std::vector<bool> out(shape.size(), false);
  for (auto &u : uop::toposort(lowered(l, value, shape, idx)))
    if (u->dtype == DType::Float32 && (uop::op_info(u->op).flags & uop::OpInfo::kPays)) mark_ranges(u, idx, out);
  return out;
}

std::vector<std::vector<int64_t>> load_strides(const UOpRef &value, const Shape &shape) {
  Lowerer l;
  std::vector<UOpRef> idx;
  std::vector<std::vector<int64_t>> out;
  for (auto &u : loads_in(lowered(l, value, shape, idx))) {
    const Affine a = affine(u->src[1]);
    std::vector<int64_t> strides(shape.size(), 0);
    for (size_t d = 0; d < idx.size(); d++) {
      if (idx[d]->op != Op::Range) continue;
      auto it = a.terms.find(idx[d].get());
      // A loop variable inside another term (a division, a modulo) has no one stride.
      const bool elsewhere = std::any_of(a.terms.begin(), a.terms.end(), [&](const auto &t) {
        if (t.first == idx[d].get()) return false;
        for (auto &x : uop::toposort(UOpRef(t.first->shared_from_this())))
          if (x == idx[d]) return true;
        return false;
      });
      if (elsewhere) strides[d] = kVaries;
      else if (it != a.terms.end()) strides[d] = it->second;
    }
    out.push_back(strides);
  }
  return out;
}

bool lanes_load_consecutive(const UOpRef &value, const Shape &shape, int64_t lanes) {
  Lowerer l;
  l.sum_lanes = lanes;
  std::vector<UOpRef> idx;
  lowered(l, value, shape, idx);
  for (const auto &sum : l.lane_sums) {
    const std::vector<UOpRef> first = loads_in(sum[0]), second = loads_in(sum[1]);
    for (size_t i = 0; i < first.size() && i < second.size(); i++)
      if (consecutive({first[i]->src[1], second[i]->src[1]})) return true;
  }
  return false;
}

namespace {

LoweredKernel lower_store(Lowerer &l, const UOpRef &store, const Upcast &up) {
  const shape::ShapeTracker &st = store->arg_as<shape::ShapeTracker>();
  const Shape &shape = st.shape();
  LoweredKernel k;
  auto group = output_indices(l, shape, up, k.out_ranges);
  const UOpRef yes = UOp::const_int(1, DType::Bool);
  // Row-major, or in the order a permuted tracker gives (the block pass's).
  auto at = [&](const std::vector<UOpRef> &idx) { return st.contiguous() ? ravel(idx, shape) : view_index(st, idx).first; };
  auto store_at = [&](const std::vector<UOpRef> &idx) {
    return UOp::make(Op::Store, DType::Bool, {store->src[0], at(idx), l.eval(store->src[1], idx, yes)});
  };
  if (!up.empty()) {
    l.share_reduce_ranges = true;
    std::vector<UOpRef> stores;
    for (auto &idx : group) stores.push_back(store_at(idx));
    k.sink = UOp::make(Op::Sink, DType::Bool, stores);
    const auto [axis, amount] = up.back();
    const int64_t n = shape[static_cast<size_t>(axis)];
    if (n % amount != 0) {
      LOOM_CHECK(std::all_of(shape.begin() + axis + 1, shape.end(), [](int64_t d) { return d == 1; }) && up.size() == 1,
                 "an upcast that leaves a tail must be the innermost axis's only one");
      // Outside the groups' loop (the innermost, where there is more than one group).
      k.tail_depth = k.out_ranges.size() - (n / amount > 1 ? 1 : 0);
      LOOM_CHECK(k.tail_depth >= 1, "an upcast tail needs an outer output loop");
      std::vector<UOpRef> tail;
      std::vector<UOpRef> idx = group[0];
      for (int64_t t = n / amount * amount; t < n; t++) {
        idx[static_cast<size_t>(axis)] = UOp::const_int(t);
        tail.push_back(store_at(idx));
      }
      k.tail_sink = UOp::make(Op::Sink, DType::Bool, tail);
    }
    return k;
  }
  const std::vector<UOpRef> &idx = group[0];
  if (store->src[1]->op == Op::Scan) {  // the scanned axis runs innermost, in order, on one thread
    const UOpRef r = idx[static_cast<size_t>(store->src[1]->arg_as<uop::ReduceArg>().axes.at(0))];
    if (r->op == Op::Range) {
      k.out_ranges.erase(std::find(k.out_ranges.begin(), k.out_ranges.end(), r));
      k.out_ranges.push_back(r);
      k.serial = k.out_ranges.size() == 1;
    }
  }
  UOpRef value = l.eval(store->src[1], idx, UOp::const_int(1, DType::Bool));
  UOpRef out = UOp::make(Op::Store, DType::Bool, {store->src[0], at(idx), value});
  k.sink = UOp::make(Op::Sink, DType::Bool, {out});
  return k;
}

}  // namespace

LoweredKernel lower(const UOpRef &ast, const Upcast &up, bool fold_short, int64_t sum_lanes, bool two_level) {
  const UOpRef &store = ast->src[0];
  Lowerer l;
  l.fold_short = fold_short;
  l.two_level = two_level;
  if (std::holds_alternative<uop::WriteArg>(store->arg)) return lower_write(l, store, up);
  l.sum_lanes = sum_lanes;
  LoweredKernel k = lower_store(l, store, up);
  k.lane_sums = std::move(l.lane_sums);
  return k;
}

UOpRef value_at(const UOpRef &value, const std::vector<UOpRef> &idx, const UOpRef &node, const UOpRef &given) {
  Lowerer l;
  l.given[node.get()] = given;
  return l.eval(value, idx, UOp::const_int(1, DType::Bool));
}

std::vector<int64_t> sum_inner_level(const std::vector<int64_t> &sizes) {
  std::vector<int64_t> inner(sizes.size(), 1);
  int64_t n = 1;
  for (int64_t m : sizes) n *= m;
  if (n < kTwoLevelSum) return inner;
  int64_t block = 1, taken = 1;
  while (block * block < n) block *= 2;
  for (size_t i = sizes.size(); i-- > 0;) {
    const int64_t m = sizes[i];
    int64_t b = m;
    while (taken * b > block) {  // the largest divisor of m that fits
      do b--;
      while (m % b != 0);
    }
    inner[i] = b;
    taken *= b;
    if (b != m) break;
  }
  if (taken < 8 || taken == n) std::fill(inner.begin(), inner.end(), 1);
  return inner;
}

}  // namespace loom::codegen
