#include "schedule/gemm.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "knobs/knobs.h"
#include "schedule/gemm_gathers.h"
#include "schedule/gemm_split_k.h"
#include "schedule/parts.h"
#include "schedule/schedule_cache.h"
#include "uop/graph.h"
#include "uop/node_map.h"

namespace loom::schedule {

using shape::ShapeTracker;
using uop::Op;
using uop::UOp;

namespace {

constexpr int64_t kMinSide = 8;  // m, n and k below this stay one generated kernel
constexpr int64_t kWide = 128;   // matrices this wide keep the output's order
// A gathered B's shortest runs of consecutive elements: along its rows (a
// row of the panel at a time), along its columns (a column at a time, then
// transposed: shorter runs cost more there than a pack, 7 on AVX2).
constexpr int64_t kMinGatherRun = 4, kMinGatherRunDown = 16;
// Gathers::FewRows: a B read by at most this many rows of A. Its pack moves
// 8 bytes an element for 2 * m flops of the GEMM: at 64 rows, hlb's first
// layers, the pack took half as long as the library's GEMM after it.
constexpr int64_t kFewRows = 64;
std::atomic<int64_t> g_min_macs{knobs::gemm_min_macs()};
// The engine's setting where it sets none: the CPU's generated GEMMs are the C
// target's packed template (codegen/gemm_tiles.h), which reads either way.
std::atomic<bool> g_transposed_packs{knobs::extern_gemm() || knobs::device() == "CPU"};
std::atomic<GatherRule> g_gathers{
    knobs::device() == "CPU" ? GatherRule{knobs::extern_gemm() ? Gathers::FewRows : Gathers::All, false}
                             : GatherRule{knobs::extern_gemm() ? Gathers::Off : Gathers::All, true}};

}  // namespace

bool gathers(int64_t m, bool half, bool batched, bool a_gathered) {
  const GatherRule g = g_gathers.load();
  return g.halves == half && (batched || a_gathered || !g.batched) &&
         (g.which == Gathers::All || (g.which == Gathers::FewRows && m <= kFewRows));
}

namespace {

// Where the tensor-core template gathers every half GEMM's operands, it
// runs every half GEMM and no library does: an elementwise value of a half
// GEMM's sum is the template's epilogue instead of a kernel of its own.
bool fuses_epilogue() {
  const GatherRule g = g_gathers.load();
  return g.halves && g.which == Gathers::All;
}

}  // namespace

// A gathered A: where the tensor-core template gathers every GEMM's B, in
// a GEMM without batch axes (a convolution's weight gradient, whose A, the
// output gradient, is as large as its pack; a batched GEMM's A is the
// weights, shared by the images, whose pack is small: cuDNN and cuBLAS
// read it).
bool gathers_a(bool half, bool batched) {
  const GatherRule g = g_gathers.load();
  return half && g.halves && !batched && g.which == Gathers::All;
}

std::optional<shape::View> merged_view(const shape::View &outer, const shape::View &inner) {
  if (outer.mask || inner.mask || outer.offset != 0) return std::nullopt;
  if (inner.contiguous()) return outer;
  std::vector<int64_t> row_major(inner.shape.size(), 1);
  for (size_t j = inner.shape.size(); j-- > 1;) row_major[j - 1] = row_major[j] * inner.shape[j];
  std::vector<bool> used(inner.shape.size(), false);
  shape::View v = outer;
  v.offset = inner.offset;
  for (size_t d = 0; d < outer.shape.size(); d++) {
    if (outer.strides[d] == 0 || outer.shape[d] == 1) {
      v.strides[d] = 0;
      continue;
    }
    std::optional<size_t> axis;
    for (size_t j = 0; j < inner.shape.size(); j++)
      if (!used[j] && row_major[j] == outer.strides[d] && inner.shape[j] >= outer.shape[d] &&
          (!axis || inner.shape[j] > inner.shape[*axis]))
        axis = j;
    if (!axis) return std::nullopt;
    used[*axis] = true;
    v.strides[d] = inner.strides[*axis];
  }
  return v;
}

namespace {

// Which axes of `shape` the value of `e` (an operand of the product, of that
// shape) depends on: through the views it reads, a stride or a mask along the
// axis. Anything but views, constants, ALU and casts (an indexed load, a
// reduction) counts as depending on every axis.
std::vector<bool> axes_read(const UOpRef &e, const Shape &shape) {
  std::vector<bool> uses(shape.size(), false);
  uop::NodeSet seen;
  std::vector<const UOp *> stack{e.get()};
  while (!stack.empty()) {
    const UOp *u = stack.back();
    stack.pop_back();
    if (!seen.insert(u) || u->op == Op::Const || u->op == Op::DefineVar) continue;
    if (u->op == Op::View) {
      const shape::View &v = u->arg_as<ShapeTracker>().views.back();
      for (size_t d = 0; d < shape.size(); d++) {
        const bool masked = v.mask && (*v.mask)[d] != std::pair<int64_t, int64_t>{0, shape[d]};
        uses[d] = uses[d] || (shape[d] > 1 && (v.strides[d] != 0 || masked));
      }
      continue;
    }
    if (!uop::is_alu(u->op) && u->op != Op::Cast) return std::vector<bool>(shape.size(), true);
    for (auto &s : u->src) stack.push_back(s.get());
  }
  return uses;
}

int64_t prod_of(const Shape &shape, const std::vector<int64_t> &axes) {
  int64_t n = 1;
  for (int64_t a : axes) n *= shape[static_cast<size_t>(a)];
  return n;
}

// How an operand of shape S is read as a batch of matrices: S's axes `prefix`
// (the batch), then `rows` merged into one axis and `cols` into another; every
// other axis of S is one the operand does not read.
struct Layout {
  std::vector<int64_t> prefix, rows, cols;
};

// The views of a stack a contiguous bottom view does not change.
ShapeTracker without_identity_base(ShapeTracker st) {
  while (st.views.size() > 1 && st.views[0].contiguous()) st.views.erase(st.views.begin());
  return st;
}

// `st` (over S) permuted to [prefix..., rows..., cols..., the rest], and the
// axes the operand does not read shrunk to 1: all but the prefix's when
// `keep_batch` (those keep their size, stride 0), all of them otherwise.
ShapeTracker permuted(const ShapeTracker &st, const Shape &s, const Layout &l, const std::vector<bool> &reads,
                      bool keep_batch) {
  std::vector<int64_t> perm = l.prefix;
  perm.insert(perm.end(), l.rows.begin(), l.rows.end());
  perm.insert(perm.end(), l.cols.begin(), l.cols.end());
  const size_t kept = perm.size();
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); d++)
    if (std::find(perm.begin(), perm.end(), d) == perm.end()) perm.push_back(d);
  shape::Mask bounds;
  for (size_t i = 0; i < perm.size(); i++) {
    const auto d = static_cast<size_t>(perm[i]);
    const bool full = i < kept && (i >= l.prefix.size() || keep_batch || reads[d]);
    bounds.push_back({0, full ? s[d] : 1});
  }
  return without_identity_base(st).permute(perm).shrink(bounds);
}

// How many elements of `axes` (of the operand's view `st` over `s`, in that
// order) its innermost view reads consecutively: the trailing axes whose
// strides continue one another from 1.
int64_t contiguous_run(const ShapeTracker &st, const Shape &s, const std::vector<int64_t> &axes) {
  const shape::View &v = st.views.back();
  int64_t run = 1;
  for (size_t i = axes.size(); i-- > 0;) {
    const auto d = static_cast<size_t>(axes[i]);
    if (s[d] == 1) continue;
    if (v.strides[d] != run || (v.mask && (*v.mask)[d] != std::pair<int64_t, int64_t>{0, s[d]})) break;
    run *= s[d];
  }
  return run;
}

// The operand's shape as a batch of matrices: [prefix..., rows, cols], each
// prefix axis its size in `p` (permuted()'s).
Shape matrices_shape(const Shape &p, const Shape &s, const Layout &l) {
  Shape out(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(l.prefix.size()));
  out.push_back(prod_of(s, l.rows));
  out.push_back(prod_of(s, l.cols));
  return out;
}

// The half dtype of an operand that is a float16 or bfloat16 buffer widened
// as read: VIEW(CAST to float32 of VIEW(buffer)).
std::optional<DType> widened_half(const UOpRef &e) {
  if (e->op != Op::View || e->src[0]->op != Op::Cast || e->src[0]->dtype != DType::Float32) return std::nullopt;
  const UOpRef &inner = e->src[0]->src[0];
  if (inner->op != Op::View || inner->src[0]->op != Op::DefineGlobal) return std::nullopt;
  if (inner->dtype != DType::Float16 && inner->dtype != DType::BFloat16) return std::nullopt;
  return inner->dtype;
}

// A kernel that sums a product of two float32 operands p and q over some of
// its axes, as analyze reads it.
struct Product {
  UOpRef r, mul;                    // the REDUCE_AXIS and the MUL it sums
  Shape s;                          // the product's shape
  std::vector<int64_t> out, k;      // its output axes (of size > 1) and reduced axes
  std::vector<int> label;           // per output axis: 1 read by p only, 2 by q only, 3 by both
  std::vector<bool> reads_p, reads_q;
};

std::optional<Product> find_product(const UOpRef &ast) {
  Product pr;
  pr.r = only_reduction(ast);
  if (!pr.r) return std::nullopt;
  if (pr.r->arg_as<uop::ReduceArg>().op != Op::Add || pr.r->dtype != DType::Float32) return std::nullopt;
  pr.mul = pr.r->src[0];
  if (pr.mul->op != Op::Mul || pr.mul->dtype != DType::Float32) return std::nullopt;
  pr.s = uop::shape_of(pr.mul);
  const Shape &s = pr.s;
  if (shape::prod(s) == 0) return std::nullopt;
  const std::vector<int64_t> &reduced = pr.r->arg_as<uop::ReduceArg>().axes;
  pr.reads_p = axes_read(pr.mul->src[0], s);
  pr.reads_q = axes_read(pr.mul->src[1], s);
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); d++) {
    if (s[static_cast<size_t>(d)] == 1) continue;
    if (std::find(reduced.begin(), reduced.end(), d) != reduced.end()) {
      pr.k.push_back(d);
      continue;
    }
    const int l = static_cast<int>(pr.reads_p[static_cast<size_t>(d)]) |
                  static_cast<int>(pr.reads_q[static_cast<size_t>(d)]) << 1;
    if (l == 0) return std::nullopt;
    pr.out.push_back(d);
    pr.label.push_back(l);
  }
  if (pr.out.empty() || pr.k.empty()) return std::nullopt;
  return pr;
}

// The product seen as a batch of matrices [batch..., m, k, n]: the output
// axes of the batch, the rows and the columns, which label the rows have,
// and the sizes.
struct MatrixPlan {
  Layout layout;  // its prefix, rows and cols (the reduced axes are Product::k)
  int row_label = 0;
  int64_t m = 0, n = 0, kn = 0;
};

// The plan, or nullopt where the matrices are too small for a GEMM.
std::optional<MatrixPlan> plan_matrices(const Product &pr) {
  const Shape &s = pr.s;
  const std::vector<int64_t> &out = pr.out;
  const std::vector<int> &label = pr.label;
  const int col_label = label.back() != 3 ? label.back() : 2, row_label = 3 - col_label;
  // Two ways to see the sum as a batch of matrices. In the output's order:
  // the trailing run of one label the columns, the run of the other before
  // them the rows, all before the batch (the GEMM writes the output as it is).
  // Grouped: the axes both operands read the batch, every axis of one label
  // the rows, of the other the columns: the largest matrices, read back
  // through a permuted view. Grouped where the first's are narrow (a
  // convolution's input gradient per image and channel, a 3x3 image).
  Layout in_order, grouped;
  size_t cols_at = out.size(), rows_at;
  while (cols_at > 0 && label[cols_at - 1] == col_label) cols_at--;
  for (rows_at = cols_at; rows_at > 0 && label[rows_at - 1] == row_label;) rows_at--;
  if (rows_at < cols_at && cols_at < out.size()) {
    in_order.prefix.assign(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(rows_at));
    in_order.rows.assign(out.begin() + static_cast<std::ptrdiff_t>(rows_at), out.begin() + static_cast<std::ptrdiff_t>(cols_at));
    in_order.cols.assign(out.begin() + static_cast<std::ptrdiff_t>(cols_at), out.end());
  }
  for (size_t i = 0; i < out.size(); i++)
    (label[i] == 3 ? grouped.prefix : label[i] == row_label ? grouped.rows : grouped.cols).push_back(out[i]);
  auto narrow = [&](const Layout &l) {
    return l.rows.empty() || l.cols.empty() ? int64_t{0} : std::min(prod_of(s, l.rows), prod_of(s, l.cols));
  };
  MatrixPlan plan;
  plan.layout = narrow(in_order) >= kWide || narrow(grouped) <= narrow(in_order) ? in_order : grouped;
  plan.row_label = row_label;
  if (narrow(plan.layout) == 0) return std::nullopt;
  plan.m = prod_of(s, plan.layout.rows);
  plan.n = prod_of(s, plan.layout.cols);
  plan.kn = prod_of(s, pr.k);
  const int64_t min_macs = g_min_macs.load(), min_side = min_macs > 0 ? kMinSide : 1;
  if (plan.m < min_side || plan.n < min_side || plan.kn < min_side ||
      prod_of(s, plan.layout.prefix) * plan.m * plan.n * plan.kn < min_macs)
    return std::nullopt;
  return plan;
}

// What the operands' views are made against: the split being built, the
// product's shape, the canonical GEMM's shape [batch..., m, k, n], and the
// half dtype both operands widen from (a half GEMM) if any.
struct GemmTarget {
  Split &split;
  const Shape &s;
  Shape g;
  std::optional<DType> half;
  bool a_gathered = false;   // set once A's view is made
  bool a_may_gather = true;  // false: A packs where it is no strided matrix
};

// An operand's view in the GEMM: its own view when that is already a
// strided matrix (unit stride along rows or columns) of another buffer than
// the output or, where the GEMM gathers it (set_gemm_gathers: a B, a half
// A), any view of such a buffer; else a pack kernel's row-major scratch
// buffer.
UOpRef operand_view(GemmTarget &t, const UOpRef &e, const Layout &l, const std::vector<bool> &reads, bool is_a) {
  const Shape &s = t.s;
  const std::optional<DType> &half = t.half;
  auto to_gemm = [&](const ShapeTracker &mat) {
    Shape sh = mat.shape();
    sh.insert(sh.end() - (is_a ? 0 : 2), 1);
    return mat.reshape(sh).expand(t.g);
  };
  const bool on_buffer = e->op == Op::View && e->src[0]->op == Op::DefineGlobal;
  const ShapeTracker &st = on_buffer || half ? e->arg_as<ShapeTracker>() : ShapeTracker::from_shape(s);
  const UOpRef &buffer = half ? e->src[0]->src[0]->src[0] : e->src[0];
  if ((on_buffer || half) && buffer->arg_as<int64_t>() != 0) {
    const ShapeTracker p = permuted(st, s, l, reads, true);
    const ShapeTracker mat = p.reshape(matrices_shape(p.shape(), s, l));
    // A half operand's memory view: through its CAST's inner view.
    const std::optional<shape::View> mem =
        !mat.single_plain() ? std::nullopt
        : half             ? merged_view(mat.views[0], e->src[0]->src[0]->arg_as<ShapeTracker>().views.at(0))
                           : std::optional<shape::View>(mat.views[0]);
    if (mem && (!half || e->src[0]->src[0]->arg_as<ShapeTracker>().single_plain())) {
      const shape::Strides &str = mem->strides;
      const int64_t row = str[str.size() - 2], col = str.back();
      if ((row == 1 || col == 1) && std::all_of(str.begin(), str.end(), [](int64_t x) { return x >= 0; }))
        return UOp::make(Op::View, DType::Float32, {e->src[0]}, to_gemm(mat));
    }
    // Gathered: a float32 B by the C template, run by run along its columns
    // or its rows, whichever run longer, where they run far enough (a
    // convolution's windows along image rows); halves, B or A, by the
    // tensor-core template, element by element, where the CAST reads the
    // buffer as it is (the views are then the buffer's).
    const int64_t across = contiguous_run(st, s, l.cols), down = contiguous_run(st, s, l.rows);
    const bool runs = across >= down ? across >= kMinGatherRun : down >= kMinGatherRunDown;
    const bool batched = t.g.size() > 3;
    if ((is_a ? t.a_may_gather && gathers_a(half.has_value(), batched)
              : gathers(t.g[t.g.size() - 3], half.has_value(), batched, t.a_gathered)) &&
        (half ? e->src[0]->src[0]->arg_as<ShapeTracker>().contiguous() : runs)) {
      t.a_gathered = is_a;
      return UOp::make(Op::View, DType::Float32, {e->src[0]}, to_gemm(mat));
    }
  }
  // The pack stores the operand's axes unmerged (its read stays one view
  // where the operand's is), in the order of the matrices it makes, or of
  // their transposes where a buffer's longer contiguous run is then the
  // pack's innermost (a convolution's weight gradient reads its windows
  // along the image's rows, not the 3 taps); a half operand's pack stores
  // its halves (narrowing the widened value back).
  const bool transposed = on_buffer && !half && g_transposed_packs.load() &&
                          contiguous_run(st, s, l.rows) > contiguous_run(st, s, l.cols);
  const Layout stored = transposed ? Layout{l.prefix, l.cols, l.rows} : l;
  const ShapeTracker p = permuted(st, s, stored, reads, false);
  const Shape packed = matrices_shape(p.shape(), s, stored);
  Shape unmerged;
  for (int64_t x : p.shape())
    if (x != 1) unmerged.push_back(x);
  const DType dt = half ? *half : DType::Float32;
  const int64_t ref = t.split.add_scratch(dt, shape::prod(packed));
  UOpRef value = UOp::make(Op::View, DType::Float32, {on_buffer || half ? e->src[0] : e}, p.reshape(unmerged));
  if (half) value = UOp::make(Op::Cast, dt, {value});
  t.split.parts.push_back(make_part(value, ref, dt, ShapeTracker::from_shape(unmerged), dims_name("pack", packed)));
  ShapeTracker mat = ShapeTracker::from_shape(packed);
  if (transposed) {
    std::vector<int64_t> swap(packed.size());
    for (size_t i = 0; i < swap.size(); i++) swap[i] = static_cast<int64_t>(i);
    std::swap(swap[swap.size() - 2], swap.back());
    mat = mat.permute(swap);
  }
  if (!half) return UOp::make(Op::View, DType::Float32, {global(DType::Float32, ref)}, to_gemm(mat));
  const UOpRef widened = UOp::make(Op::Cast, DType::Float32, {UOp::make(Op::View, dt, {global(dt, ref)}, mat)});
  return UOp::make(Op::View, DType::Float32, {widened}, to_gemm(mat));
}

// The operands' views chunked for split-K (schedule/gemm_split_k.h), or
// nullopt where the GEMM keeps one sum per output.
std::optional<std::pair<UOpRef, UOpRef>> split_k(const MatrixPlan &plan, int64_t batch, size_t nb, const UOpRef &va,
                                                 const UOpRef &vb, int64_t &chunks) {
  chunks = k_chunks(batch * plan.m * plan.n, plan.kn);
  const std::optional<ShapeTracker> sa = chunks > 1 ? chunked(va->arg_as<ShapeTracker>(), nb, chunks) : std::nullopt,
                                    sb = sa ? chunked(vb->arg_as<ShapeTracker>(), nb, chunks) : std::nullopt;
  if (!sb) return std::nullopt;
  return std::pair{UOp::make(Op::View, va->dtype, {va->src[0]}, *sa), UOp::make(Op::View, vb->dtype, {vb->src[0]}, *sb)};
}

// The GEMM's result in scratch buffer `c_buf` (its axes `order`, the
// product's, with split-K's `chunks` after the first `nb`) read back in the
// shape of the product's sum: the output's axes in their order, the
// partials added up.
UOpRef read_back_sum(const Product &pr, const std::vector<int64_t> &order, size_t nb, int64_t chunks,
                     const UOpRef &c_buf) {
  const Shape &r_shape = uop::shape_of(pr.r);
  Shape c_axes;  // the GEMM's result with its axes unmerged, in `order` (the chunks after the prefix)
  std::vector<int64_t> to_output;
  for (int64_t d : order) c_axes.push_back(pr.s[static_cast<size_t>(d)]);
  for (int64_t d : pr.out)
    to_output.push_back(static_cast<int64_t>(std::find(order.begin(), order.end(), d) - order.begin()));
  if (chunks == 1)
    return UOp::make(Op::View, DType::Float32, {c_buf},
                     ShapeTracker::from_shape(c_axes).permute(to_output).reshape(r_shape));
  // The partials' sum: the chunks axis last, then added up.
  c_axes.insert(c_axes.begin() + static_cast<std::ptrdiff_t>(nb), chunks);
  std::vector<int64_t> perm;
  for (int64_t i : to_output) perm.push_back(i < static_cast<int64_t>(nb) ? i : i + 1);
  perm.push_back(static_cast<int64_t>(nb));
  Shape with_chunks = r_shape;
  with_chunks.push_back(chunks);
  const UOpRef partials =
      UOp::make(Op::View, DType::Float32, {c_buf}, ShapeTracker::from_shape(c_axes).permute(perm).reshape(with_chunks));
  const UOpRef added = UOp::make(Op::ReduceAxis, DType::Float32, {partials},
                                 uop::ReduceArg{Op::Add, {static_cast<int64_t>(with_chunks.size()) - 1}});
  with_chunks.back() = 1;
  return UOp::make(Op::View, DType::Float32, {added}, ShapeTracker::from_shape(with_chunks).reshape(r_shape));
}

// The GEMM of the operands' views `va` and `vb`, writing the kernel's output
// itself when the kernel stores nothing but the sum in the output's order
// (of a half GEMM, `half`, maybe rounded to the operands' dtype), or, where
// the tensor-core template runs it (fuses_epilogue), a value computed
// elementwise from the sum in that order (GemmShape::epilogue); else a
// scratch buffer an epilogue kernel (the kernel's value with the sum read
// back from it) reads. Split-K: the GEMM writes a partial sum per chunk of terms
// (a batch axis after the others), which the epilogue adds up.
void add_gemm(Split &split, const UOpRef &ast, const Product &pr, const MatrixPlan &plan, UOpRef va, UOpRef vb,
              std::optional<DType> half) {
  const UOpRef &store = ast->src[0];
  const UOpRef &value = store->src[1];
  const Shape &s = pr.s;
  const std::vector<int64_t> &prefix = plan.layout.prefix, &rows = plan.layout.rows, &cols = plan.layout.cols;
  const size_t nb = prefix.size();
  Shape c_shape;
  for (int64_t d : prefix) c_shape.push_back(s[static_cast<size_t>(d)]);
  int64_t chunks = 1;
  if (auto v = split_k(plan, shape::prod(c_shape), nb, va, vb, chunks)) {
    std::tie(va, vb) = *v;
    c_shape.push_back(chunks);
  } else {
    chunks = 1;
  }
  Shape reduced_shape = c_shape;
  reduced_shape.insert(reduced_shape.end(), {plan.m, 1, plan.n});
  c_shape.insert(c_shape.end(), {plan.m, plan.n});
  const UOpRef sum = UOp::make(Op::ReduceAxis, DType::Float32, {UOp::make(Op::Mul, DType::Float32, {va, vb})},
                               uop::ReduceArg{Op::Add, {static_cast<int64_t>(c_shape.size()) - 1}});
  const UOpRef c = UOp::make(Op::View, DType::Float32, {sum}, ShapeTracker::from_shape(reduced_shape).reshape(c_shape));
  std::vector<int64_t> order = prefix;
  order.insert(order.end(), rows.begin(), rows.end());
  order.insert(order.end(), cols.begin(), cols.end());
  const UOpRef &r = pr.r;
  // The value is the sum itself, or it read in order through views (a
  // reshape, a copy point's marker over it), or of a half GEMM that rounded
  // to the operands' dtype (`rounded`: the GEMM stores it so).
  bool rounded = false;
  auto in_order = [&, numel = shape::prod(uop::shape_of(r))](UOpRef v) {
    for (; v->op == Op::View || (half && v->op == Op::Cast && v->dtype == *half && !rounded); v = v->src[0]) {
      if (v->op == Op::Cast) {
        rounded = true;
        continue;
      }
      if (!v->arg_as<ShapeTracker>().contiguous() || shape::prod(v->arg_as<ShapeTracker>().shape()) != numel) return false;
    }
    return v == r;
  };
  const bool direct = order == pr.out && in_order(value) && chunks == 1;
  std::vector<int64_t> gemm_dims = c_shape;
  gemm_dims.push_back(plan.kn / chunks);
  const ShapeTracker c_st = ShapeTracker::from_shape(c_shape);
  if (direct) {
    split.parts.push_back(make_part(rounded ? UOp::make(Op::Cast, *half, {c}) : c, 0, rounded ? *half : DType::Float32,
                                    c_st, dims_name("gemm", gemm_dims)));
    return;
  }
  std::unordered_map<const UOp *, UOpRef> memo;
  auto with_sum = [&](const UOpRef &sum_read) {
    return uop::replace_nodes(value, [&](const UOpRef &u) -> UOpRef { return u == r ? sum_read : nullptr; }, memo);
  };
  if (half && fuses_epilogue() && chunks == 1 && order == pr.out && store->arg_as<ShapeTracker>().contiguous() &&
      reads_sum_in_place(value, r)) {
    const UOpRef in_place =
        UOp::make(Op::View, DType::Float32, {sum}, ShapeTracker::from_shape(reduced_shape).reshape(uop::shape_of(r)));
    split.parts.push_back(make_part(with_sum(in_place), 0, store->src[0]->dtype, store->arg_as<ShapeTracker>(),
                                    dims_name("gemm", gemm_dims)));
    return;
  }
  const int64_t c_ref = split.add_scratch(DType::Float32, shape::prod(c_shape));
  split.parts.push_back(make_part(c, c_ref, DType::Float32, c_st, dims_name("gemm", gemm_dims)));
  const UOpRef read_back = read_back_sum(pr, order, nb, chunks, global(DType::Float32, c_ref));
  split.parts.push_back(make_part(with_sum(read_back), 0, store->src[0]->dtype, store->arg_as<ShapeTracker>(),
                                  dims_name("E", store->arg_as<ShapeTracker>().shape())));
}

// Splits one kernel (see gemm.h); `parts` stays empty when it is not a large
// GEMM-shaped reduction.
Split analyze(const UOpRef &ast) {
  Split split(ast);
  const std::optional<Product> pr = find_product(ast);
  const std::optional<MatrixPlan> plan = pr ? plan_matrices(*pr) : std::nullopt;
  if (!plan) return split;
  const Layout &l = plan->layout;
  GemmTarget t{split, pr->s, {}, std::nullopt};
  for (int64_t d : l.prefix) t.g.push_back(pr->s[static_cast<size_t>(d)]);
  t.g.insert(t.g.end(), {plan->m, plan->kn, plan->n});
  // A is the operand the rows belong to.
  const bool p_is_a = plan->row_label == 1;
  const UOpRef &a = p_is_a ? pr->mul->src[0] : pr->mul->src[1], &b = p_is_a ? pr->mul->src[1] : pr->mul->src[0];
  // Both operands halves of one dtype widened as read: a half GEMM (its packs
  // hold halves, exactly; on tensor cores where the target has them).
  const std::optional<DType> ha = widened_half(a), hb = widened_half(b);
  t.half = ha && ha == hb ? ha : std::nullopt;
  const Layout la{l.prefix, l.rows, pr->k};
  const std::vector<bool> &reads_a = p_is_a ? pr->reads_p : pr->reads_q;
  UOpRef va = operand_view(t, a, la, reads_a, true);
  const UOpRef vb = operand_view(t, b, {l.prefix, pr->k, l.cols}, p_is_a ? pr->reads_q : pr->reads_p, false);
  // A is read through its views only beside a gathered B (a convolution's
  // weight gradient, which cuDNN takes whole); beside a B in memory it packs
  // for the library that reads that.
  if (t.a_gathered && vb->arg_as<ShapeTracker>().single_plain()) {
    t.a_may_gather = false;
    va = operand_view(t, a, la, reads_a, true);
  }
  add_gemm(split, ast, *pr, *plan, va, vb, t.half);
  return split;
}

SplitMemo &memo() {
  static auto *m = new SplitMemo(analyze);
  return *m;
}

}  // namespace

int64_t set_gemm_min_macs(int64_t macs) {
  const int64_t old = g_min_macs.exchange(macs);
  memo().clear();
  clear_schedule_cache();  // its templates hold split kernels
  return old;
}
int64_t gemm_min_macs() { return g_min_macs.load(); }

namespace {

// A setting the splits depend on: a change drops the splits made before.
template <typename T>
T set_split_setting(std::atomic<T> &setting, T on) {
  const T was = setting.exchange(on);
  if (was != on) {
    memo().clear();
    clear_schedule_cache();  // its templates hold split kernels
  }
  return was;
}

}  // namespace

bool set_gemm_packs_transposed(bool on) { return set_split_setting(g_transposed_packs, on); }
GatherRule set_gemm_gathers(GatherRule rule) { return set_split_setting(g_gathers, rule); }

void split_gemms(Schedule &sched) {
  if (!knobs::noopt()) apply_splits(sched, memo());  // LOOM_NOOPT=1: no splits
}


}  // namespace loom::schedule
