#include "schedule/realize_points.h"

#include <algorithm>
#include <set>

#include "schedule/donate.h"
#include "uop/graph.h"

namespace loom::schedule {

using uop::base_of;
using uop::NodeMap;
using uop::NodeSet;
using uop::shape_of;
using uop::Op;
using uop::UOp;

bool is_leaf(const UOpRef &u) { return u->op == Op::Buffer || u->op == Op::Const; }

namespace {

bool is_reshape(const UOpRef &v) { return v->arg_as<shape::ShapeTracker>().contiguous(); }

bool is_elementwise(const UOp &u) { return uop::is_alu(u.op) || u.op == Op::Cast || u.op == Op::View; }

// A half buffer (through views; a realized one or one realized here) widened
// to float32, maybe viewed again: exact and as cheap as its load, so a kernel reading it through
// an expanding view converts per read rather than reading a float32 copy (a
// half matmul's operands stay halves in its kernel: the tensor-core GEMM's
// operands, schedule/gemm.h).
bool is_widened_buffer(UOpRef u, const NodeSet &rp) {
  while (u->op == Op::View) u = u->src[0];  // a padded one too (a convolution's input)
  if (u->op != Op::Cast || u->dtype != DType::Float32) return false;
  const DType from = u->src[0]->dtype;
  if (from != DType::Float16 && from != DType::BFloat16) return false;
  UOpRef x = u->src[0];
  while (x->op == Op::View) x = x->src[0];
  return x->op == Op::Buffer || always_realized(x.get()) || rp.contains(x.get());
}

// A value computed with costly math (exp, log, tanh, erf: a polynomial per
// element, uop/ops.def's kPays) that several kernels would inline gets its
// own buffer: computed once and read, as torch's kernels read an
// activation's gradient, rather than computed again in each kernel (GELU's
// gradient read by BatchNorm's backward's two sums and its input gradient).
// The node taken is the one where the reads part into several kernels (the
// walk runs from the outputs back); a small value is recomputed, as cheap as
// a launch.
constexpr int64_t kSharedCostlyMinElements = 4096;
template <typename Realize>
void realize_shared_costly(const std::vector<UOpRef> &order, const NodeSet &constant_only, const NodeSet &rp,
                           Realize realize) {
  NodeSet costly;  // an unrealized costly op inside, within the node's kernel
  for (auto &u : order) {
    if (!is_elementwise(*u) || constant_only.contains(u.get())) continue;
    bool c = uop::is_alu(u->op) && (uop::op_info(u->op).flags & uop::OpInfo::kPays);
    for (auto &s : u->src) c = c || (!rp.contains(s.get()) && costly.contains(s.get()));
    if (c) costly.insert(u.get());
  }
  // Walking from the outputs back: the kernel that reads each node (its
  // root, a realized node), or several.
  struct Readers {
    const UOp *root = nullptr;
    bool several = false;
  };
  NodeMap<Readers> readers;
  for (size_t i = order.size(); i-- > 0;) {
    const UOp *u = order[i].get();
    Readers mine = readers[u];
    if (mine.several && !rp.contains(u) && costly.contains(u) && u->op != Op::View &&
        shape::prod(shape_of(order[i])) >= kSharedCostlyMinElements)
      realize(u, "computes costly math (exp, log, tanh, erf) and several kernels read it (each would compute it "
                 "again)");
    if (rp.contains(u)) mine = {u, false};
    for (auto &s : u->src) {
      Readers &r = readers[s.get()];
      r = !r.root && !r.several ? mine : Readers{r.root, r.several || mine.several || r.root != mine.root};
    }
  }
}

// Whether the readers of order[at] (several) are one kernel's: every path
// from them passes a few ALU ops and casts, none realized, to one ALU op
// where all meet (GELU's x * (erf(x v) + 1) after a cast, a square's x * x).
// That kernel computes order[at] once for both reads (the lowerer's values
// are per node and index), so a reduction inside it is not repeated.
constexpr size_t kMeetWithin = 32;
bool readers_meet(const std::vector<UOpRef> &order, size_t at, const NodeMap<std::vector<size_t>> &readers,
                  const NodeSet &rp) {
  const std::vector<size_t> &first = *readers.find(order[at].get());
  std::set<size_t> pending(first.begin(), first.end());
  for (size_t steps = 0; !pending.empty() && steps < kMeetWithin; steps++) {
    const size_t x = *pending.begin();
    pending.erase(pending.begin());
    const UOp &u = *order[x];
    if (pending.empty()) return uop::is_alu(u.op);  // every path meets here
    const std::vector<size_t> *next = readers.find(&u);
    if ((!uop::is_alu(u.op) && u.op != Op::Cast) || rp.contains(&u) || !next || next->empty()) return false;
    pending.insert(next->begin(), next->end());
  }
  return false;
}

}  // namespace

NodeSet find_realize_points(const std::vector<UOpRef> &order, const std::vector<UOpRef> &outputs,
                            Reasons *why) {
  NodeSet rp;
  auto realize = [&](const UOp *u, const char *reason) {
    if (rp.insert(u) && why) (*why)[u] = reason;
  };
  for (auto &o : outputs)
    if (!is_leaf(uop::root_of(o))) realize(base_of(o).get(), "an output of the realize");
  // Distinct nodes reading each node (x * x reads x once), by position in `order`.
  NodeMap<std::vector<size_t>> readers;
  for (size_t at = 0; at < order.size(); at++) {
    const UOpRef &u = order[at];
    if (always_realized(u.get())) realize(u.get(), "its op always gets a kernel of its own (CONTIGUOUS, WRITE, SCAN, SORT)");
    for (size_t i = 0; i < u->src.size(); i++)
      if (std::none_of(u->src.begin(), u->src.begin() + i, [&](const UOpRef &p) { return p == u->src[i]; }))
        readers[u->src[i].get()].push_back(at);
  }
  auto consumers = [&](const UOp *u) {
    const std::vector<size_t> *r = readers.find(u);
    return r ? r->size() : size_t{0};
  };
  // A gathered operand is read at addresses known only when the kernel runs,
  // a sorted one by a library kernel: both read it from a buffer.
  for (auto &u : order)
    if ((u->op == Op::Gather || u->op == Op::Sort) && !is_leaf(uop::root_of(u->src[0])))
      realize(base_of(u->src[0]).get(), u->op == Op::Gather ? "gathered: read at addresses known when the kernel runs"
                                                            : "sorted by a library kernel, which reads a buffer");
  // A reduction is computed once: a node whose kernel would contain an
  // unrealized reduction gets its own buffer when several nodes read it,
  // unless they meet in one kernel (readers_meet; else each kernel would
  // inline the reduction again), or when it is read through a view that
  // is not a reshape (a broadcast, a pad, a permute, windows: each element
  // would be recomputed per read).
  NodeMap<bool> has_reduce;  // unrealized reduce inside, within the kernel
  for (size_t at = 0; at < order.size(); at++) {
    const UOpRef &u = order[at];
    bool r = u->op == Op::ReduceAxis;
    for (auto &s : u->src) r |= !rp.contains(s.get()) && has_reduce[s.get()];
    if (u->op == Op::View && !is_reshape(u) && !rp.contains(u->src[0].get()) && has_reduce[u->src[0].get()] &&
        !is_leaf(u->src[0])) {
      realize(u->src[0].get(), "holds a reduction and is read through a view that is not a reshape (each read "
                               "would recompute it)");
      r = false;
    }
    if (r && consumers(u.get()) > 1 && !readers_meet(order, at, readers, rp)) {
      realize(u.get(), "holds a reduction and has several readers in several kernels (each would compute it again)");
      r = false;
    }
    has_reduce[u.get()] = r;
  }
  // A reduction reading a computed node through an expanding view (matmul's
  // and conv's broadcast operands, overlapping windows) would recompute each
  // element once per read: the viewed node gets its own buffer. Elementwise
  // kernels keep fusing their broadcasts, and a node computed from constants
  // and runtime scalars alone (a short arange, tensor/tensor.cpp) reads no
  // memory: it is recomputed wherever it is read.
  NodeSet constant_only;
  for (auto &u : order) {
    if (u->op == Op::Const || (is_elementwise(*u) && std::all_of(u->src.begin(), u->src.end(), [&](const UOpRef &s) {
                                 return constant_only.contains(s.get());
                               })))
      constant_only.insert(u.get());
  }
  NodeMap<bool> feeds_reduce;  // read by a reduction in the same kernel
  for (size_t i = order.size(); i-- > 0;) {
    const UOpRef &u = order[i];
    const bool feeds = u->op == Op::ReduceAxis || (feeds_reduce[u.get()] && !rp.contains(u.get()));
    for (auto &s : u->src) feeds_reduce[s.get()] |= feeds;
    if (u->op == Op::View && feeds_reduce[u.get()] && !is_leaf(u->src[0]) && !is_widened_buffer(u->src[0], rp) &&
        !constant_only.contains(u->src[0].get()) && shape::prod(shape_of(u)) > shape::prod(shape_of(u->src[0])))
      realize(u->src[0].get(), "read by a reduction through an expanding view (a matmul's or a convolution's "
                               "operand: each element would be recomputed per read)");
  }
  realize_shared_costly(order, constant_only, rp, realize);
  return rp;
}

}  // namespace loom::schedule
