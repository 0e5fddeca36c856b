#include "schedule/split_reduce.h"

#include <algorithm>
#include <atomic>
#include <optional>

#include "knobs/knobs.h"
#include "schedule/parts.h"
#include "schedule/schedule_cache.h"
#include "uop/graph.h"

namespace loom::schedule {

using shape::ShapeTracker;
using uop::Op;
using uop::UOp;

namespace {

std::atomic<int64_t> g_min_length{knobs::split_min_length()};

constexpr int64_t kLanes[] = {64, 8, 2};  // 64 and 8: the widths the optimizer makes vectors of

bool splittable(DType dt) { return dt != DType::Float16 && dt != DType::BFloat16 && dt != DType::Bool; }

// Only views (of buffers or constants), ALU and casts between the reduction
// and its leaves: each view then takes a reshape of the folded shape.
bool plain_operand(const UOpRef &x) {
  for (auto &u : uop::toposort(x)) {
    if (u->op == Op::View || uop::is_kernel_leaf(u->op)) continue;
    if (!uop::is_alu(u->op) && u->op != Op::Cast) return false;
  }
  return true;
}

// How a reduction folding `length` elements into each of `outputs` is cut.
// Lanes: the innermost reduced axis, when it is the input's innermost,
// keeps `lanes` interleaved partials (a vector of accumulators over
// consecutive elements). Chunks: the reduced axis `axis` cut into `parts`,
// the most (up to kPartials per output, each at least min_chunk long),
// keeps one partial per chunk.
struct Cut {
  int64_t lane_axis = 0, lanes = 1;
  int64_t axis = -1, parts = 1;
};

std::optional<Cut> choose_cut(const Shape &s, const std::vector<int64_t> &reduced, int64_t outputs, int64_t length,
                              int64_t min_chunk) {
  Cut c;
  c.lane_axis = *std::max_element(reduced.begin(), reduced.end());
  const auto la = static_cast<size_t>(c.lane_axis);
  if (split_policy().lanes && std::all_of(s.begin() + c.lane_axis + 1, s.end(), [](int64_t n) { return n == 1; }))
    for (int64_t l : kLanes)
      if (s[la] % l == 0) {
        c.lanes = l;
        break;
      }
  const int64_t most = std::max<int64_t>(2, split_policy().partials / outputs);
  for (int64_t a : reduced) {
    const int64_t n = s[static_cast<size_t>(a)] / (a == c.lane_axis ? c.lanes : 1);
    for (int64_t p = std::min(most, n); p > c.parts; p--)
      if (n % p == 0 && length / p >= min_chunk) {
        c.axis = a;
        c.parts = p;
        break;
      }
  }
  if (c.axis < 0) return std::nullopt;
  return c;
}

// The input's shape with the chunk axis cut into [parts, n / parts] and the
// lane axis into [n / lanes, lanes], the axes the partials fold over, and
// the two outer parts they keep.
struct CutShape {
  Shape shape;
  std::vector<int64_t> axes, kept;
};

CutShape cut_shape(const Shape &s, const std::vector<int64_t> &reduced, const Cut &c) {
  CutShape cs;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); d++) {
    const bool is_reduced = std::find(reduced.begin(), reduced.end(), d) != reduced.end();
    int64_t n = s[static_cast<size_t>(d)];
    if (d == c.axis) {
      cs.kept.push_back(static_cast<int64_t>(cs.shape.size()));
      cs.shape.push_back(c.parts);
      n /= c.parts;
    }
    if (d == c.lane_axis && c.lanes > 1) n /= c.lanes;
    if (is_reduced) cs.axes.push_back(static_cast<int64_t>(cs.shape.size()));
    cs.shape.push_back(n);
    if (d == c.lane_axis && c.lanes > 1) {
      cs.kept.push_back(static_cast<int64_t>(cs.shape.size()));
      cs.shape.push_back(c.lanes);
    }
  }
  return cs;
}

Split analyze(const UOpRef &ast) {
  Split split(ast);
  const UOpRef r = only_reduction(ast);
  if (!r) return split;
  const UOpRef &store = ast->src[0];
  const UOpRef &value = store->src[1];
  if (!splittable(r->dtype)) return split;
  const auto &ra = r->arg_as<uop::ReduceArg>();
  if ((ra.op != Op::Add && ra.op != Op::Max && ra.op != Op::Min) || ra.axes.empty()) return split;
  const UOpRef &x = r->src[0];
  const Shape &s = uop::shape_of(x);
  const int64_t outputs = shape::prod(uop::shape_of(r)), total = shape::prod(s);
  const int64_t min_length = g_min_length.load(), min_chunk = min_length > 0 ? split_policy().min_chunk : 1;
  if (outputs == 0) return split;
  const int64_t length = total / outputs;  // elements folded into each output
  if ((min_length > 0 && outputs >= split_policy().outputs) || length < min_length || !plain_operand(x)) return split;
  const std::optional<Cut> c = choose_cut(s, ra.axes, outputs, length, min_chunk);
  if (!c) return split;

  // The fold over the cut input: one partial per chunk and lane.
  const CutShape cs = cut_shape(s, ra.axes, *c);
  std::unordered_map<const UOp *, UOpRef> memo;
  const UOpRef chunked = uop::replace_nodes(
      x,
      [&](const UOpRef &u) -> UOpRef {
        return u->op == Op::View ? UOp::make(Op::View, u->dtype, {u->src[0]}, u->arg_as<ShapeTracker>().reshape(cs.shape))
                                 : nullptr;
      },
      memo);
  const UOpRef partial = UOp::make(Op::ReduceAxis, r->dtype, {chunked}, uop::ReduceArg{ra.op, cs.axes});
  const Shape &partial_shape = uop::shape_of(partial);
  const int64_t ref = split.add_scratch(r->dtype, shape::prod(partial_shape));
  split.parts.push_back(make_part(partial, ref, r->dtype, ShapeTracker::from_shape(partial_shape),
                                  dims_name("r", {outputs, c->parts, c->lanes})));

  // The partials folded over the chunk axis, in place of the reduction.
  const UOpRef partials = UOp::make(Op::View, r->dtype, {global(r->dtype, ref)}, ShapeTracker::from_shape(partial_shape));
  const UOpRef folded = UOp::make(Op::ReduceAxis, r->dtype, {partials}, uop::ReduceArg{ra.op, cs.kept});
  const UOpRef whole = UOp::make(Op::View, r->dtype, {folded},
                                 ShapeTracker::from_shape(uop::shape_of(folded)).reshape(uop::shape_of(r)));
  memo.clear();
  const UOpRef rest = uop::replace_nodes(value, [&](const UOpRef &u) -> UOpRef { return u == r ? whole : nullptr; }, memo);
  const ShapeTracker &out = store->arg_as<ShapeTracker>();
  split.parts.push_back(make_part(rest, 0, store->src[0]->dtype, out, ""));
  return split;
}

SplitMemo &memo() {
  static auto *m = new SplitMemo(analyze);
  return *m;
}

}  // namespace

void split_reductions(Schedule &sched) {
  if (!knobs::noopt()) apply_splits(sched, memo());  // LOOM_NOOPT=1: no splits
}

int64_t set_split_min_length(int64_t n) {
  const int64_t old = g_min_length.exchange(n);
  memo().clear();
  clear_schedule_cache();  // its templates hold split kernels
  return old;
}
int64_t split_min_length() { return g_min_length.load(); }

const SplitPolicy &split_policy() {
  static const SplitPolicy p = knobs::device() == "CPU" ? kCpuSplit : kGpuSplit;
  return p;
}

}  // namespace loom::schedule
