#include "codegen/gemm_epilogue.h"

#include "codegen/indexing.h"
#include "codegen/lowerer.h"
#include "loom/error.h"
#include "uop/graph.h"
#include "uop/symbolic.h"

namespace loom::codegen {

using uop::Op;
using uop::UOp;

GemmEpilogue gemm_epilogue(const UOpRef &ast, const schedule::GemmShape &g) {
  const UOpRef &store = ast->src[0];
  UOpRef r;
  for (const UOpRef &u : uop::toposort(store->src[1]))
    if (u->op == Op::ReduceAxis) r = u;
  LOOM_CHECK(r && g.epilogue, "no GEMM epilogue in this kernel");
  auto leaf = [](int64_t size, int64_t name) {
    return UOp::make(Op::Range, DType::Int64, {UOp::const_int(size)}, name);
  };
  const UOpRef flat = (leaf(shape::prod(g.batch), kEpilogueBatch) * g.m + leaf(g.m, kEpilogueRow)) * g.n +
                      leaf(g.n, kEpilogueCol);
  const std::vector<UOpRef> idx = unravel(uop::simplify(flat), store->arg_as<shape::ShapeTracker>().shape());
  GemmEpilogue e;
  e.sum = UOp::make(Op::Load, DType::Float32, {UOp::make(Op::DefineGlobal, DType::Float32, {}, int64_t{-1}),
                                               UOp::const_int(0)});
  e.value = value_at(store->src[1], idx, r, e.sum);
  return e;
}

}  // namespace loom::codegen
