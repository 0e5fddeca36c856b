#include "codegen/gemm_epilogue.h"

#include <functional>
#include <unordered_map>
#include <vector>

#include "codegen/indexing.h"
#include "codegen/lowerer.h"
#include "loom/error.h"
#include "uop/graph.h"
#include "uop/symbolic.h"

namespace loom::codegen {

using uop::Op;
using uop::UOp;

namespace {

// The kernel's elementwise value over C's shape: each view it reads
// through (of a buffer, a constant, the sum) reshaped from the store's
// contiguous shape to C's, so that addresses follow from the coordinates
// of C rather than through the store's axes.
UOpRef over_c(const UOpRef &value, const Shape &c_shape) {
  std::unordered_map<const uop::UOp *, UOpRef> memo;
  std::function<UOpRef(const UOpRef &)> walk = [&](const UOpRef &u) -> UOpRef {
    if (auto it = memo.find(u.get()); it != memo.end()) return it->second;
    UOpRef out = u;
    if (u->op == Op::View) {
      out = UOp::make(Op::View, u->dtype, u->src, u->arg_as<shape::ShapeTracker>().reshape(c_shape));
    } else if (!u->src.empty()) {
      std::vector<UOpRef> src;
      for (const UOpRef &s : u->src) src.push_back(walk(s));
      out = u->with_src(src);
    }
    return memo[u.get()] = out;
  };
  return walk(value);
}

}  // namespace

GemmEpilogue gemm_epilogue(const UOpRef &ast, const schedule::GemmShape &g) {
  const UOpRef &store = ast->src[0];
  UOpRef r;
  for (const UOpRef &u : uop::toposort(store->src[1]))
    if (u->op == Op::ReduceAxis) r = u;
  LOOM_CHECK(r && g.epilogue, "no GEMM epilogue in this kernel");
  auto leaf = [](int64_t size, int64_t name) {
    return UOp::make(Op::Range, DType::Int64, {UOp::const_int(size)}, name);
  };
  GemmEpilogue e;
  // Distinct arguments: equal nodes are one node (m == n would merge row and col).
  e.batch = leaf(shape::prod(g.batch), -10), e.row = leaf(g.m, -11), e.col = leaf(g.n, -12);
  std::vector<UOpRef> idx = unravel(e.batch, g.batch);
  idx.push_back(e.row);
  idx.push_back(e.col);
  Shape c_shape = g.batch;
  c_shape.insert(c_shape.end(), {g.m, g.n});
  e.sum = UOp::make(Op::Load, DType::Float32, {UOp::make(Op::DefineGlobal, DType::Float32, {}, int64_t{-1}),
                                               UOp::const_int(0)});
  e.value = value_at(over_c(store->src[1], c_shape), idx, r, e.sum);
  return e;
}

}  // namespace loom::codegen
