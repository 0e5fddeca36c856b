#include "codegen/gemm_gather.h"

#include <algorithm>
#include <atomic>

#include "codegen/affine.h"
#include "codegen/indexing.h"
#include "uop/graph.h"
#include "uop/symbolic.h"

namespace loom::codegen {

using uop::Op;
using uop::UOp;
using uop::UOpRef;

namespace {

bool index_arithmetic(Op op) {
  switch (op) {
    case Op::Const: case Op::Range: case Op::Add: case Op::Sub: case Op::Mul: case Op::IDiv: case Op::Mod:
    case Op::Neg: case Op::Max: case Op::Min: case Op::CmpLt: case Op::CmpLe: case Op::CmpEq: case Op::CmpNe:
    case Op::And: case Op::Or: case Op::Xor: case Op::Not: case Op::Where:
      return true;
    default:
      return false;
  }
}

std::atomic<bool> g_runs{true};

UOpRef leaf(int64_t size, int64_t name) { return UOp::make(Op::Range, DType::Int64, {UOp::const_int(size)}, name); }

bool holds_any(const uop::UOp *term, const std::vector<UOpRef> &leaves) {
  for (const UOpRef &x : uop::toposort(UOpRef(term->shared_from_this())))
    if (std::find(leaves.begin(), leaves.end(), x) != leaves.end()) return true;
  return false;
}

// The affine expression's value without the term of `skip` (null: none);
// nullopt where another term holds one of the run axes' leaves.
std::optional<UOpRef> rebuild(const Affine &a, const uop::UOp *skip, const std::vector<UOpRef> &run) {
  UOpRef e = UOp::const_int(a.constant);
  for (auto &[term, c] : a.terms) {
    if (term == skip) continue;
    if (holds_any(term, run)) return std::nullopt;
    e = e + UOpRef(term->shared_from_this()) * c;
  }
  return uop::simplify(e);
}

// floor(a / c) for c > 0 in C's truncating division.
UOpRef floor_div(const UOpRef &a, int64_t c) {
  const UOpRef neg = uop::alu(Op::IDiv, a * -1 + (c - 1), UOp::const_int(c)) * -1;
  return UOp::make(Op::Where, DType::Int64,
                   {uop::alu(Op::CmpLt, a, UOp::const_int(0)), neg, uop::alu(Op::IDiv, a, UOp::const_int(c))});
}

// The conjuncts of a validity.
void conjuncts(const UOpRef &v, std::vector<UOpRef> &out) {
  if (v->op == Op::And) {
    for (auto &s : v->src) conjuncts(s, out);
  } else {
    out.push_back(v);
  }
}

// The top view of B's tracker merges [batch..., m, k, n] row-major from the
// view below it, m broadcast: the axes of that view split into the batch
// axes B reads, k's and n's. Fills r's sizes; false where it does not.
bool split_axes(const schedule::GemmShape &g, const shape::ShapeTracker &st, GatherRuns &r) {
  if (st.views.size() < 2) return false;
  const shape::View &top = st.views.back();
  const size_t nb = g.batch.size();
  if (top.mask || top.offset != 0 || top.strides[nb] != 0 || top.strides[nb + 2] != 1 || top.strides[nb + 1] != g.n)
    return false;
  int64_t expect = g.k * g.n, read = 1;
  for (size_t d = nb; d-- > 0;) {
    if (top.strides[d] == 0 || g.batch[d] == 1) continue;
    if (top.strides[d] != expect) return false;
    r.batch_dims.insert(r.batch_dims.begin(), static_cast<int64_t>(d));
    expect *= g.batch[d];
    read *= g.batch[d];
  }
  const Shape &u = st.views[st.views.size() - 2].shape;  // its axes of size 1 aside
  std::vector<size_t> axes;
  for (size_t a = 0; a < u.size(); a++)
    if (u[a] != 1) axes.push_back(a);
  size_t i = axes.size();
  for (int64_t p = 1; p < g.n && i > 0;) p *= u[axes[--i]];
  const size_t cols = i;
  for (int64_t p = 1; p < g.k && i > 0;) p *= u[axes[--i]];
  auto sizes = [&](size_t from, size_t to, Shape &out, std::vector<size_t> &at) {
    for (size_t x = from; x < to; x++) out.push_back(u[axes[x]]), at.push_back(axes[x]);
  };
  sizes(0, i, r.batch_sizes, r.batch_at);
  sizes(i, cols, r.row_sizes, r.row_at);
  sizes(cols, axes.size(), r.col_sizes, r.col_at);
  return shape::prod(r.col_sizes) == g.n && shape::prod(r.row_sizes) == g.k && shape::prod(r.batch_sizes) == read;
}

bool is_index_arithmetic(const UOpRef &flat, const UOpRef &valid) {
  for (const UOpRef &e : {flat, valid})
    for (const auto &u : uop::toposort(e))
      if (!index_arithmetic(u->op)) return false;
  return true;
}

// B's element through the view below the merge of [batch..., m, k, n]
// (split_axes): k and n unravelled into their own axes, so that no division
// takes k and n merged (a convolution's (k N + n) / (3 N) is k / 3).
std::optional<GatherIndex> unmerged_index(const schedule::GemmShape &g) {
  GatherRuns r;
  if (!split_axes(g, *g.b.view, r)) return std::nullopt;
  shape::ShapeTracker below = *g.b.view;
  below.views.erase(below.views.end() - 1);
  std::vector<UOpRef> idx(below.shape().size(), UOp::const_int(0));  // size-1 axes: 0
  auto place = [&](const std::vector<UOpRef> &coords, const std::vector<size_t> &at) {
    for (size_t i = 0; i < coords.size(); i++) idx[at[i]] = coords[i];
  };
  UOpRef flat_batch = UOp::const_int(0);  // the batch axes B reads, flattened row-major
  for (size_t i = r.batch_dims.size(), mult = 1; i-- > 0;) {
    const auto d = static_cast<size_t>(r.batch_dims[i]);
    flat_batch = flat_batch + leaf(g.batch[d], kGatherBatch + r.batch_dims[i]) * static_cast<int64_t>(mult);
    mult *= static_cast<size_t>(g.batch[d]);
  }
  place(unravel(flat_batch, r.batch_sizes), r.batch_at);
  place(unravel(leaf(g.k, kGatherRow), r.row_sizes), r.row_at);
  place(unravel(leaf(g.n, kGatherCol), r.col_sizes), r.col_at);
  auto [flat, valid] = view_index(below, idx);
  if (!is_index_arithmetic(flat, valid)) return std::nullopt;
  return GatherIndex{flat, valid};
}

}  // namespace

std::optional<GatherIndex> gather_index(const schedule::GemmShape &g, bool is_b) {
  const schedule::GemmOperand &o = is_b ? g.b : g.a;
  if (!o.view) return std::nullopt;
  if (is_b)
    if (std::optional<GatherIndex> u = unmerged_index(g)) return u;
  // The tracker's shape: [batch..., m, k, n]; B reads k and n, A m and k.
  std::vector<UOpRef> idx;
  for (size_t d = 0; d < g.batch.size(); d++) idx.push_back(leaf(g.batch[d], kGatherBatch + static_cast<int64_t>(d)));
  if (is_b) {
    idx.insert(idx.end(), {UOp::const_int(0), leaf(g.k, kGatherRow), leaf(g.n, kGatherCol)});
  } else {
    idx.insert(idx.end(), {leaf(g.m, kGatherRow), leaf(g.k, kGatherCol), UOp::const_int(0)});
  }
  auto [flat, valid] = view_index(*o.view, idx);
  if (!is_index_arithmetic(flat, valid)) return std::nullopt;
  return GatherIndex{flat, valid};
}

bool set_gather_runs(bool on) { return g_runs.exchange(on); }

std::optional<GatherRuns> gather_runs(const schedule::GemmShape &g, bool along_rows) {
  if (!g.b.view || !g_runs.load()) return std::nullopt;
  GatherRuns r;
  r.along_rows = along_rows;
  if (!split_axes(g, *g.b.view, r) || (along_rows ? r.row_sizes : r.col_sizes).empty()) return std::nullopt;
  shape::ShapeTracker below = *g.b.view;
  below.views.erase(below.views.end() - 1);
  std::vector<UOpRef> idx(below.shape().size(), UOp::const_int(0));  // size-1 axes: 0
  const std::vector<UOpRef> batch = unravel(leaf(shape::prod(r.batch_sizes), kGatherFlatBatch), r.batch_sizes);
  for (size_t i = 0; i < batch.size(); i++) idx[r.batch_at[i]] = batch[i];
  std::vector<UOpRef> rows, cols;
  for (size_t i = 0; i < r.row_sizes.size(); i++) {
    rows.push_back(leaf(r.row_sizes[i], kGatherRowAxis + static_cast<int64_t>(i)));
    idx[r.row_at[i]] = rows.back();
  }
  for (size_t j = 0; j < r.col_sizes.size(); j++) {
    cols.push_back(leaf(r.col_sizes[j], kGatherColAxis + static_cast<int64_t>(j)));
    idx[r.col_at[j]] = cols.back();
  }
  const std::vector<UOpRef> &run = along_rows ? rows : cols;  // the axes the runs walk
  auto [flat, valid] = view_index(below, idx);
  const Affine fa = affine(flat);  // the run axes: leaves with a stride each, in no other term
  for (auto &[term, c] : fa.terms)
    if (std::find(run.begin(), run.end(), UOpRef(term->shared_from_this())) == run.end() && holds_any(term, run))
      return std::nullopt;
  r.flat = flat;
  const auto inner = fa.terms.find(run.back().get());
  r.step = inner == fa.terms.end() ? 0 : inner->second;
  r.fixed_valid = UOp::const_int(1, DType::Bool);
  r.lower.resize(run.size());
  r.upper.resize(run.size());
  std::vector<UOpRef> conds;
  conjuncts(valid, conds);
  for (const UOpRef &c : conds) {
    if (c->op == Op::Const) {
      if (c->arg_as<int64_t>() == 0) r.fixed_valid = c;
      continue;
    }
    if (c->op != Op::CmpLt) return std::nullopt;
    const Affine d = affine(uop::simplify(c->src[1] + c->src[0] * -1));  // the condition: d > 0
    size_t axis = run.size();
    for (size_t j = 0; j < run.size(); j++)
      if (d.terms.count(run[j].get())) {
        if (axis != run.size()) return std::nullopt;  // two run axes in one bound
        axis = j;
      }
    const std::optional<UOpRef> rest = rebuild(d, axis < run.size() ? run[axis].get() : nullptr, run);
    if (!rest) return std::nullopt;
    if (axis == run.size()) {
      r.fixed_valid = uop::alu(Op::And, r.fixed_valid, uop::alu(Op::CmpLt, UOp::const_int(0), *rest));
      continue;
    }
    // c N + rest > 0: N >= floor(-rest / c) + 1 (c > 0), N < ceil(rest / -c) (c < 0)
    const int64_t coef = d.terms.at(run[axis].get());
    if (coef > 0) {
      r.lower[axis].push_back(uop::simplify(coef == 1 ? *rest * -1 + 1 : floor_div(*rest * -1, coef) + 1));
    } else {
      r.upper[axis].push_back(uop::simplify(coef == -1 ? *rest : floor_div(*rest * -1, -coef) * -1));
    }
  }
  return r;
}

}  // namespace loom::codegen
