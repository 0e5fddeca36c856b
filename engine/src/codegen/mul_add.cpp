#include "codegen/mul_add.h"

#include "uop/pattern.h"

namespace loom::codegen {

using uop::Op;
using uop::UOp;
using uop::UOpRef;
using uop::UPat;

namespace {

bool fusable(DType d) { return d == DType::Float32 || d == DType::Float64; }

const uop::PatternMatcher &rules() {
  static const uop::PatternMatcher pm({
      {UPat::op(Op::Reduce),
       [](const uop::Match &m) -> UOpRef {
         const UOpRef &r = m.root;
         const auto &arg = r->arg_as<uop::ReduceArg>();
         const UOpRef &v = r->src[0];
         if (arg.op != Op::Add || !fusable(r->dtype) || v->op != Op::Mul || v->dtype != r->dtype) return nullptr;
         return UOp::make(Op::Reduce, r->dtype, r->src.vec(), uop::ReduceArg{Op::MulAdd, arg.axes});
       }},
  });
  return pm;
}

}  // namespace

LoweredKernel fuse_multiply_add(const LoweredKernel &k) {
  LoweredKernel r = k;
  r.sink = uop::graph_rewrite(k.sink, rules());
  if (k.tail_sink) r.tail_sink = uop::graph_rewrite(k.tail_sink, rules());
  return r;
}

std::vector<UOpRef> fold_operands(const UOpRef &reduce) {
  if (reduce->arg_as<uop::ReduceArg>().op == Op::MulAdd) return {reduce->src[0]->src[0], reduce->src[0]->src[1]};
  return {reduce->src[0]};
}

}  // namespace loom::codegen
