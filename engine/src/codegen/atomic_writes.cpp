#include "codegen/atomic_writes.h"

#include "uop/graph.h"

namespace loom::codegen {

using uop::Op;
using uop::UOp;

namespace {

bool has_atomic_add(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Int32 || d == DType::Int64;
}

bool reads(const UOpRef &value, const UOpRef &buf) {
  for (const UOpRef &u : uop::toposort(value))
    if (u->op == Op::Load && u->src[0] == buf) return true;
  return false;
}

// STORE(buf, i, ADD(LOAD(buf, i[, g]), v)[, g]) as ATOMIC_ADD(buf, i, v[, g]);
// null where `s` is not of that form.
UOpRef atomic_form(const UOpRef &s) {
  if (s->op != Op::Store || s->src.size() < 3) return nullptr;
  const UOpRef &buf = s->src[0], &index = s->src[1], &sum = s->src[2];
  if (sum->op != Op::Add || !has_atomic_add(sum->dtype)) return nullptr;
  const UOpRef gate = s->src.size() > 3 ? s->src[3] : nullptr;
  for (size_t side : {0, 1}) {
    const UOpRef &old = sum->src[side], &v = sum->src[1 - side];
    const UOpRef old_gate = old->src.size() > 2 ? old->src[2] : nullptr;
    if (old->op != Op::Load || old->src[0] != buf || old->src[1] != index || old_gate != gate || reads(v, buf))
      continue;
    std::vector<UOpRef> src{buf, index, v};
    if (gate) src.push_back(gate);
    return UOp::make(Op::AtomicAdd, DType::Bool, src);
  }
  return nullptr;
}

}  // namespace

LoweredKernel atomic_writes(LoweredKernel k, const Target &t) {
  if (!t.atomic_add || !k.serial || k.tail_sink) return k;
  std::vector<UOpRef> adds;
  for (const UOpRef &s : k.sink->src) {
    UOpRef a = atomic_form(s);
    if (!a) return k;
    adds.push_back(a);
  }
  k.sink = UOp::make(Op::Sink, DType::Bool, adds);
  k.serial = false;
  return k;
}

}  // namespace loom::codegen
