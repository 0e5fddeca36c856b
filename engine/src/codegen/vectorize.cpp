#include "codegen/vectorize.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "codegen/affine.h"
#include "uop/graph.h"

namespace loom::codegen {

using uop::Op;
using uop::UOp;

int64_t lanes(const UOp &u) {
  if (u.op == Op::Vectorize) return static_cast<int64_t>(u.src.size());
  if (u.op == Op::Reduce || u.op == Op::DefineAcc) return lanes(*u.src[0]);
  const bool carries = u.op == Op::Load || u.op == Op::Store || u.op == Op::Cast || uop::is_alu(u.op);
  return carries && std::holds_alternative<int64_t>(u.arg) ? std::get<int64_t>(u.arg) : 1;
}

namespace {

// The lanes of a vector: the widest count of 16, 8 or 4, at most
// `max_lanes`, that divides the innermost upcast's amount (memory vectors:
// 4), 0 when none does.
int64_t lane_count(int64_t amount, Vectors mode, int64_t max_lanes) {
  for (int64_t w : {16, 8, 4})
    if (amount % w == 0 && (w == 4 || (mode == Vectors::All && w <= max_lanes))) return w;
  return 0;
}

// Whether vectors pay: some lanes load consecutive elements, or compute an op
// whose row has kPays (exp, erf, log, tanh), or store consecutive elements
// computed on vectors without gathering a load (values shared by the lanes
// and per-lane constants: a max-pool's gradient over its windows). Memory
// vectors: some load or store is one access.
// Lanes that only gather (a row sum's rows) stay scalar chains.
bool pays(const UOpRef &sink, Vectors mode) {
  bool stores = false, gathers = false;
  for (auto &u : uop::toposort(sink)) {
    if (lanes(*u) == 1) continue;
    if (u->op == Op::Load || (mode == Vectors::Memory && u->op == Op::Store)) return true;
    if (mode == Vectors::All && (uop::op_info(u->op).flags & uop::OpInfo::kPays)) return true;
    stores = stores || u->op == Op::Store;
    gathers = gathers || (u->op == Op::Vectorize && std::any_of(u->src.begin(), u->src.end(), [](const UOpRef &s) {
                            return s->op == Op::Load;
                          }));
  }
  return mode == Vectors::All && stores && !gathers;
}

bool all_same(const std::vector<UOpRef> &n) {
  return std::all_of(n.begin(), n.end(), [&](const UOpRef &u) { return u == n[0]; });
}

// What the C target computes on vectors: float32 values (the ops whose row
// says so) and the masks of float32 comparisons.
bool native(const UOp &u) {
  auto srcs = [&](DType d) {
    return std::all_of(u.src.begin(), u.src.end(), [&](const UOpRef &s) { return s->dtype == d; });
  };
  if (uop::op_info(u.op).flags & uop::OpInfo::kVector) return u.dtype == DType::Float32 && srcs(DType::Float32);
  switch (u.op) {
    case Op::Where:
      return u.dtype == DType::Float32 && u.src[0]->dtype == DType::Bool && u.src[1]->dtype == DType::Float32 &&
             u.src[2]->dtype == DType::Float32;
    case Op::CmpLt: case Op::CmpLe: case Op::CmpEq: case Op::CmpNe: return srcs(DType::Float32);
    case Op::And: case Op::Or: case Op::Not: return u.dtype == DType::Bool && srcs(DType::Bool);
    case Op::Cast:
      return (u.dtype == DType::Float32 && u.src[0]->dtype == DType::Bool) ||
             (u.dtype == DType::Bool && u.src[0]->dtype == DType::Float32);
    default: return false;
  }
}

// A tuple of lane nodes packed: one vector node, or the lanes' scalar nodes
// (all the same node: one value every lane shares).
struct Pack {
  UOpRef vec;
  std::vector<UOpRef> lanes;
};

class Vectorizer {
 public:
  Vectorizer(int64_t w, Vectors mode) : w_(w), mode_(mode) {}

  Pack pack(const std::vector<UOpRef> &n) {
    std::vector<const UOp *> key;
    for (auto &u : n) key.push_back(u.get());
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    Pack p = build(n);
    memo_[key] = p;
    return p;
  }

  // A value every lane reads: the vector, the shared scalar, or the lanes gathered.
  UOpRef vector_of(const Pack &p) {
    if (p.vec || all_same(p.lanes)) return p.vec ? p.vec : p.lanes[0];
    return UOp::make(Op::Vectorize, p.lanes[0]->dtype, p.lanes);
  }

  UOpRef lane(const Pack &p, size_t i) {
    return p.vec ? UOp::make(Op::Gep, p.vec->dtype, {p.vec}, static_cast<int64_t>(i)) : p.lanes[i];
  }

  std::vector<UOpRef> stores(const std::vector<UOpRef> &st) {
    std::vector<UOpRef> values, idx;
    for (auto &s : st) {
      values.push_back(s->src[2]);
      idx.push_back(s->src[1]);
    }
    const Pack v = pack(values);
    const bool gated = st[0]->src.size() > 3;
    const bool one_gate = std::all_of(st.begin(), st.end(), [&](const UOpRef &s) {
      return s->src.size() == st[0]->src.size() && (!gated || s->src[3] == st[0]->src[3]);
    });
    // Memory vectors store the lanes gathered; the C target's, a vector it computed.
    const bool packed = mode_ == Vectors::Memory ? access(idx) : v.vec != nullptr && consecutive(idx);
    const DType d = values[0]->dtype;
    if (packed && in_vectors(d) && st[0]->src[0]->dtype == d && one_gate) {
      const UOpRef value = v.vec ? v.vec : UOp::make(Op::Vectorize, d, v.lanes);
      std::vector<UOpRef> src{st[0]->src[0], idx[0], value};
      if (gated) src.push_back(st[0]->src[3]);
      return {UOp::make(Op::Store, DType::Bool, src, w_)};
    }
    std::vector<UOpRef> out;
    for (size_t i = 0; i < st.size(); i++) {
      std::vector<UOpRef> src = st[i]->src.vec();
      src[2] = lane(v, i);
      out.push_back(src[2] == st[i]->src[2] ? st[i] : UOp::make(Op::Store, DType::Bool, src));
    }
    return out;
  }

 private:
  Pack build(const std::vector<UOpRef> &n) {
    const UOp &a = *n[0];
    const bool alike = std::all_of(n.begin(), n.end(), [&](const UOpRef &u) {
      return u->op == a.op && u->dtype == a.dtype && u->src.size() == a.src.size() && uop::arg_equal(u->arg, a.arg);
    });
    if (all_same(n) || !alike) return {nullptr, n};
    if (a.op == Op::Load) return load(n);
    if (a.op == Op::Reduce) {
      for (size_t j = 1; j < a.src.size(); j++)
        if (!all_same(column(n, j))) return {nullptr, n};
      const Pack v = pack(column(n, 0));
      const Op fold = a.arg_as<uop::ReduceArg>().op;
      if (v.vec && mode_ == Vectors::All && a.dtype == DType::Float32 &&
          (fold == Op::Add || fold == Op::Max || fold == Op::Min)) {
        std::vector<UOpRef> src = a.src.vec();
        src[0] = v.vec;
        return {UOp::make(Op::Reduce, a.dtype, src, a.arg), {}};
      }
      return per_lane(n, {v});
    }
    if (!uop::is_alu(a.op) && a.op != Op::Cast) return {nullptr, n};
    std::vector<Pack> srcs;
    for (size_t j = 0; j < a.src.size(); j++) srcs.push_back(pack(column(n, j)));
    if (mode_ == Vectors::All && native(a)) {
      std::vector<UOpRef> src;
      for (auto &s : srcs) src.push_back(vector_of(s));
      return {UOp::make(a.op, a.dtype, src, w_), {}};
    }
    return per_lane(n, srcs);
  }

  // Consecutive elements under one gate: one vector load. Every second
  // element (a pool's or a strided window's): the two vector loads that span
  // them, from the first lane's element to the last's, shuffled. Otherwise
  // the lanes load alone.
  Pack load(const std::vector<UOpRef> &n) {
    const UOp &a = *n[0];
    const bool gated = a.src.size() > 2;
    if (!in_vectors(a.dtype) || a.src[0]->dtype != a.dtype || !all_same(column(n, 0)) ||
        (gated && !all_same(column(n, 2))))
      return {nullptr, n};
    if (access(column(n, 1))) return {UOp::make(Op::Load, a.dtype, a.src, w_), {}};
    if (mode_ != Vectors::All || lane_stride(column(n, 1)) != 2) return {nullptr, n};
    std::vector<UOpRef> second = a.src.vec();
    second[1] = uop::alu(Op::Add, a.src[1], UOp::const_int(w_ - 1));
    const UOpRef lo = UOp::make(Op::Load, a.dtype, a.src, w_), hi = UOp::make(Op::Load, a.dtype, second, w_);
    std::vector<UOpRef> picked;  // lo's even lanes, then hi's odd ones
    for (int64_t i = 0; i < w_; i++)
      picked.push_back(UOp::make(Op::Gep, a.dtype, {i < w_ / 2 ? lo : hi}, i < w_ / 2 ? 2 * i : 2 * i - w_ + 1));
    return {UOp::make(Op::Vectorize, a.dtype, picked), {}};
  }

  // Each lane computes its op alone, reading its lane of each operand.
  Pack per_lane(const std::vector<UOpRef> &n, const std::vector<Pack> &srcs) {
    Pack out;
    for (size_t i = 0; i < n.size(); i++) {
      std::vector<UOpRef> src = n[i]->src.vec();
      for (size_t j = 0; j < srcs.size(); j++) src[j] = lane(srcs[j], i);
      const bool same = std::equal(src.begin(), src.end(), n[i]->src.begin());
      out.lanes.push_back(same ? n[i] : UOp::make(n[i]->op, n[i]->dtype, std::move(src), n[i]->arg));
    }
    return out;
  }

  // Elements a vector access reads or writes: float32 (memory vectors: also
  // float16 and bfloat16, computed as float32).
  bool in_vectors(DType d) const {
    return d == DType::Float32 || (mode_ == Vectors::Memory && (d == DType::Float16 || d == DType::BFloat16));
  }

  // The lanes' indices are one vector access: consecutive, and for memory
  // vectors the first a multiple of the lane count.
  bool access(const std::vector<UOpRef> &idx) const {
    return consecutive(idx) && (mode_ != Vectors::Memory || aligned(idx[0], w_));
  }

  static std::vector<UOpRef> column(const std::vector<UOpRef> &n, size_t j) {
    std::vector<UOpRef> c;
    for (auto &u : n) c.push_back(u->src[j]);
    return c;
  }

  int64_t w_;
  Vectors mode_;
  std::map<std::vector<const UOp *>, Pack> memo_;
};

// Each sum's partials (lowerer.h's lane_sums) packed w at a time: a vector
// accumulator, each partial read back as its lane; the partials then add in
// lane order as before. A kernel with such sums vectorizes only them.
LoweredKernel vectorize_lane_sums(const LoweredKernel &k, Vectors mode, int64_t max_lanes) {
  const int64_t w = lane_count(static_cast<int64_t>(k.lane_sums[0].size()), mode, max_lanes);
  if (mode != Vectors::All || w == 0) return k;
  Vectorizer v(w, mode);
  std::unordered_map<const UOp *, UOpRef> lane_of;
  for (const auto &sum : k.lane_sums)
    for (size_t i = 0; i + static_cast<size_t>(w) <= sum.size(); i += static_cast<size_t>(w)) {
      const std::vector<UOpRef> part(sum.begin() + static_cast<std::ptrdiff_t>(i),
                                     sum.begin() + static_cast<std::ptrdiff_t>(i) + w);
      const Pack p = v.pack(part);
      if (!p.vec) continue;
      for (size_t j = 0; j < part.size(); j++) lane_of[part[j].get()] = v.lane(p, j);
    }
  std::unordered_map<const UOp *, UOpRef> memo;
  LoweredKernel r = k;
  r.sink = uop::replace_nodes(k.sink, [&](const UOpRef &u) {
    auto it = lane_of.find(u.get());
    return it == lane_of.end() ? nullptr : it->second;
  }, memo);
  return pays(r.sink, mode) ? r : k;
}

}  // namespace

LoweredKernel vectorize(const LoweredKernel &k, const Upcast &up, Vectors mode, int64_t max_lanes) {
  if (!k.lane_sums.empty() && !k.serial) return vectorize_lane_sums(k, mode, max_lanes);
  if (up.empty() || k.serial || mode == Vectors::None) return k;
  const int64_t w = lane_count(up.back().second, mode, max_lanes);
  const auto &st = k.sink->src;
  if (w == 0 || st.size() % static_cast<size_t>(w) != 0) return k;
  for (auto &s : st)
    if (s->src.size() < 3 || s->src[2]->op == Op::Scan) return k;
  Vectorizer v(w, mode);
  std::vector<UOpRef> out;
  for (size_t i = 0; i < st.size(); i += static_cast<size_t>(w)) {
    const std::vector<UOpRef> group(st.begin() + static_cast<std::ptrdiff_t>(i),
                                    st.begin() + static_cast<std::ptrdiff_t>(i) + w);
    for (auto &s : v.stores(group)) out.push_back(s);
  }
  LoweredKernel r = k;
  r.sink = UOp::make(Op::Sink, DType::Bool, out);
  return pays(r.sink, mode) ? r : k;
}

}  // namespace loom::codegen
