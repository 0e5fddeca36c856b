#include "schedule/gemm_shape.h"

#include <algorithm>
#include <climits>

#include "schedule/gemm.h"
#include "schedule/gemm_gathers.h"
#include "schedule/parts.h"
#include "uop/graph.h"
#include "uop/node_map.h"

namespace loom::schedule {

using shape::ShapeTracker;
using uop::Op;
using uop::UOpRef;

namespace {

// An operand of the canonical GEMM over shape g: one unmasked view of another
// buffer than the output, broadcast along `unused` (n for A, m for B).
// `in`: the buffer's dtype. A half one is VIEW(CAST to float32 of VIEW(buffer)):
// the two views merge.
std::optional<GemmOperand> gemm_operand(const UOpRef &v, const Shape &g, size_t unused, size_t row, DType in,
                                        bool a_gathered = false) {
  if (v->op != Op::View) return std::nullopt;
  UOpRef base = v->src[0];
  ShapeTracker st = v->arg_as<ShapeTracker>();
  if (in != DType::Float32) {
    if (base->op != Op::Cast || base->dtype != DType::Float32 || base->src[0]->op != Op::View) return std::nullopt;
    const ShapeTracker &inner = base->src[0]->arg_as<ShapeTracker>();
    if (st.single_plain()) {
      if (!inner.single_plain()) return std::nullopt;
      const std::optional<shape::View> v1 = merged_view(st.views[0], inner.views[0]);
      if (!v1) return std::nullopt;
      st.views[0] = *v1;
    } else if (!inner.contiguous()) {  // gathered: its views over the buffer as it is
      return std::nullopt;
    }
    base = base->src[0]->src[0];
  }
  if (base->op != Op::DefineGlobal || base->dtype != in || st.shape() != g) return std::nullopt;
  GemmOperand o;
  o.slot = base->arg_as<int64_t>();
  if (o.slot == 0) return std::nullopt;
  if (!st.single_plain()) {  // gathered through its views, not depending on m (B) or n (A)
    const shape::View &top = st.views.back();
    const bool half = in != DType::Float32, batched = g.size() > 3;
    if (!(unused == row - 1 ? gathers(g[row - 1], half, batched, a_gathered) : gathers_a(half, batched)) ||
        (top.strides[unused] != 0 && g[unused] != 1) ||
        (top.mask && (*top.mask)[unused] != std::pair<int64_t, int64_t>{0, g[unused]}))
      return std::nullopt;
    o.view = std::make_shared<const ShapeTracker>(st);
    return o;
  }
  const shape::View &view = st.views[0];
  if (view.strides[unused] != 0 && g[unused] != 1) return std::nullopt;
  o.offset = view.offset;
  o.batch_strides.assign(view.strides.begin(), view.strides.begin() + static_cast<std::ptrdiff_t>(g.size() - 3));
  o.row_stride = view.strides[row];
  o.col_stride = view.strides[row + 1];
  return o;
}

// The GEMM a kernel AST is, when it is the canonical form: SINK(STORE(row-major
// [batch..., m, n], VIEW(REDUCE_AXIS(ADD over k, MUL(VIEW(A), VIEW(B)))))) over
// the shape [batch..., m, k, n], A not depending on n, B not on m, both one
// unmasked view (of halves: CAST to float32 of the views, and the stored
// value maybe CAST back), or, of halves, its epilogue's form
// (GemmShape::epilogue). A plain matmul's kernel is one.
std::optional<GemmShape> gemm_shape(const UOpRef &ast) {
  if (ast->op != Op::Sink || ast->src.size() != 1) return std::nullopt;
  const UOpRef &store = ast->src[0];
  if (store->src.size() != 2 || !std::holds_alternative<ShapeTracker>(store->arg)) return std::nullopt;
  const ShapeTracker &out = store->arg_as<ShapeTracker>();
  const UOpRef &value = store->src[1];
  if (!out.contiguous()) return std::nullopt;
  const bool rounded = value->op == Op::Cast;  // a half GEMM's result, rounded to its dtype
  const UOpRef &c = rounded ? value->src[0] : value;
  const bool plain = c->op == Op::View && c->arg_as<ShapeTracker>() == out && c->src[0]->op == Op::ReduceAxis;
  const UOpRef r = plain ? c->src[0] : only_reduction(ast);
  if (!r || r->op != Op::ReduceAxis || r->dtype != DType::Float32 || (!plain && !reads_sum_in_place(value, r)))
    return std::nullopt;
  const auto &ra = r->arg_as<uop::ReduceArg>();
  const UOpRef &mul = r->src[0];
  if (ra.op != Op::Add || mul->op != Op::Mul) return std::nullopt;
  const UOpRef &x = mul->src[0];
  const DType in = x->op == Op::View && x->src[0]->op == Op::Cast ? x->src[0]->src[0]->dtype : DType::Float32;
  const DType out_dt = rounded || !plain ? value->dtype : DType::Float32;
  if (in != DType::Float32 && in != DType::Float16 && in != DType::BFloat16) return std::nullopt;
  if (!plain && in == DType::Float32) return std::nullopt;  // only the tensor-core template computes epilogues
  if (plain && rounded && (in == DType::Float32 || out_dt != in)) return std::nullopt;
  const Shape &g = uop::shape_of(mul);
  const size_t nb = g.size() < 3 ? 0 : g.size() - 3;
  if (g.size() < 3 || ra.axes != std::vector<int64_t>{static_cast<int64_t>(nb) + 1}) return std::nullopt;
  Shape c_shape(g.begin(), g.begin() + static_cast<std::ptrdiff_t>(nb));
  c_shape.insert(c_shape.end(), {g[nb], g[nb + 2]});
  if (plain ? out.shape() != c_shape : shape::prod(out.shape()) != shape::prod(c_shape)) return std::nullopt;
  for (int swap = 0; swap < 2; swap++) {
    const std::optional<GemmOperand> a = gemm_operand(mul->src[swap], g, nb + 2, nb, in);
    const std::optional<GemmOperand> b = a ? gemm_operand(mul->src[1 - swap], g, nb, nb + 1, in, a->view != nullptr)
                                           : std::nullopt;
    if (a && b) return GemmShape{c_shape.size() > 2 ? Shape(c_shape.begin(), c_shape.end() - 2) : Shape{},
                                 g[nb], g[nb + 2], g[nb + 1], *a, *b, in, out_dt, !plain};
  }
  return std::nullopt;
}

}  // namespace

bool reads_sum_in_place(const UOpRef &value, const UOpRef &r) {
  const std::vector<UOpRef> order = uop::toposort(value);
  uop::NodeMap<bool> above, reaches;  // reached from value without passing r; depending on r
  above[value.get()] = true;
  for (size_t i = order.size(); i-- > 0;) {
    const UOpRef &u = order[i];
    if (u != r && above[u.get()])
      for (const UOpRef &s : u->src) above[s.get()] = true;
  }
  for (const UOpRef &u : order) {
    if (u == r || !above[u.get()]) continue;
    bool on_path = false;
    for (const UOpRef &s : u->src) on_path = on_path || s == r || reaches[s.get()];
    reaches[u.get()] = on_path;
    const bool leaf = u->op == Op::Const || u->op == Op::DefineVar ||
                      (u->op == Op::DefineGlobal && u->arg_as<int64_t>() != 0);
    if (!leaf && !uop::is_alu(u->op) && u->op != Op::Cast && u->op != Op::View) return false;
    if (u->op == Op::View && on_path &&
        (!u->arg_as<ShapeTracker>().contiguous() ||
         shape::prod(u->arg_as<ShapeTracker>().shape()) != shape::prod(uop::shape_of(u->src[0]))))
      return false;
  }
  return reaches[value.get()];
}

void mark_gemms(Schedule &sched) {
  for (ScheduleItem &item : sched.items)
    if (std::optional<GemmShape> g = gemm_shape(item.ast)) item.gemm = std::make_shared<const GemmShape>(std::move(*g));
}


std::optional<BlasMatrix> blas_matrix(const GemmOperand &o, int64_t rows, int64_t cols) {
  if (o.view || o.row_stride < 0 || o.col_stride < 0 || o.offset < 0) return std::nullopt;
  BlasMatrix m;
  int64_t lead = 0;
  if (o.col_stride == 1 && (rows == 1 || o.row_stride >= cols)) {
    lead = rows == 1 ? cols : o.row_stride;
  } else if (o.row_stride == 1 && (cols == 1 || o.col_stride >= rows)) {
    m.transposed = true;
    lead = cols == 1 ? rows : o.col_stride;
  } else {
    return std::nullopt;
  }
  lead = std::max<int64_t>(lead, 1);
  if (lead > INT_MAX) return std::nullopt;
  m.ld = static_cast<int>(lead);
  return m;
}

}  // namespace loom::schedule
