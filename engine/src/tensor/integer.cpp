// Integer semantics as torch has them: floor division and remainder that
// round toward -inf (so the remainder takes the divisor's sign), bitwise ops
// and shifts. Integer arithmetic wraps, as every integer kernel does.
// floor_divide and remainder take floating inputs too, with torch's formulas.
#include "tensor/host_check.h"
#include "tensor/ops_util.h"
#include "tensor/record.h"

namespace loom {

using namespace tensor;
using uop::alu;

namespace {

// torch's floating remainder: fmod, moved into the divisor's sign.
Tensor float_remainder(const Tensor &a, const Tensor &b) {
  Tensor zero = Tensor::zeros({}, a.dtype());
  Tensor mod = make_tensor(alu(Op::Mod, a.uop(), b.uop()));
  Tensor fix = mod.ne(zero).logical_and(b.lt(zero).ne(mod.lt(zero)));
  return fix.where(mod.add(b), mod);
}

// C's fmod: the remainder of a / b rounded toward zero, in the dividend's sign.
Tensor float_fmod(const Tensor &a, const Tensor &b) { return make_tensor(alu(Op::Mod, a.uop(), b.uop())); }

// a / b rounded toward zero (floating).
Tensor truncated_quotient(const Tensor &a, const Tensor &b) {
  const Tensor q = a.div(b);
  const Tensor down = make_tensor(alu(Op::Floor, q.uop())), up = make_tensor(alu(Op::Floor, q.neg().uop())).neg();
  return q.lt(Tensor::zeros({}, q.dtype())).where(up, down);
}

// torch's floating floor division (div_floor): (a - fmod(a, b)) / b, one
// less where the remainder's sign differs, rounded to the nearest integer;
// a signed zero for a zero quotient, and a / b for a zero divisor.
Tensor float_floor_divide(const Tensor &a, const Tensor &b) {
  Tensor zero = Tensor::zeros({}, a.dtype()), one = Tensor::ones({}, a.dtype());
  Tensor mod = make_tensor(alu(Op::Mod, a.uop(), b.uop()));
  Tensor div = a.sub(mod).div(b);
  div = mod.ne(zero).logical_and(b.lt(zero).ne(mod.lt(zero))).where(div.sub(one), div);
  Tensor floored = make_tensor(alu(Op::Floor, div.uop()));
  floored = div.sub(floored).gt(Tensor::full({}, 0.5, a.dtype())).where(floored.add(one), floored);
  Tensor quotient = a.div(b);
  Tensor result = div.ne(zero).where(floored, quotient.mul(zero));  // 0 * (a / b) keeps the sign
  return b.eq(zero).where(quotient, result);
}

// An op of x and y computed by a formula, laid out as TensorIterator lays out
// the op (DESIGN 15): by the operands' strides, which the formula's last node
// does not read directly.
Tensor iterated(const UOpRef &result, const Tensor &x, const Tensor &y, DType dt) {
  return Tensor(in_iterator_layout(result, {cast_to(x.uop(), dt), cast_to(y.uop(), dt)}));
}

// Floating inputs: broadcast, computed in float32 for half types, rounded once.
Tensor floating(const Tensor &x, const Tensor &y, DType dt, Tensor (*f)(const Tensor &, const Tensor &), const char *op) {
  DType compute = dt == DType::Float16 || dt == DType::BFloat16 ? DType::Float32 : dt;
  Shape out = broadcast_shapes(x.shape(), y.shape(), op);
  // Inputs take the result dtype first (an int16 operand rounds to float16 as in torch).
  UOpRef r;
  {
    RowMajorScope one_op;  // torch's one op: laid out once, below
    r = f(x.cast(dt).cast(compute).expand(out), y.cast(dt).cast(compute).expand(out)).cast(dt).uop();
  }
  return iterated(r, x, y, dt);
}

DType integer_type(const Tensor &a, const Tensor &b, const char *op) {
  DType dt = result_type(a, b);
  if (is_float(dt)) unsupported_dtype(op, dt);
  return dt;
}

// torch raises ZeroDivisionError for an integer division by zero; that needs
// the divisor's values, as torch's kernel has them.
void check_no_zero(const Tensor &divisor, const char *op) {
  check_on_host(divisor, [op](const HostValues &h) {
    h.each_int([op](int64_t v) {
      if (v == 0) throw Error(std::string(op) + ": ZeroDivisionError (an integer divisor is 0)");
    });
  });
}

// (a, b) broadcast and cast to dt, with the quotient and C remainder of a / b.
// b == -1 is divided as 1 and negated after (the most negative value / -1 traps in C).
struct Division {
  UOpRef a, b, q, r;
};
Division divide(const Tensor &x, const Tensor &y, DType dt, const char *op) {
  auto [ua, ub] = broadcast_pair(x, y, op);
  // torch's kernel sees the divisor only where the broadcast result has
  // elements: an empty result divides by nothing.
  if (dt != DType::Bool && shape::prod(shape_of(ua)) > 0) check_no_zero(y, op);
  Division d;
  d.a = cast_to(ua, dt);
  d.b = cast_to(ub, dt);
  const Shape &shape = shape_of(d.a);
  UOpRef minus_one = const_tensor(-1, dt, shape), one = const_tensor(1, dt, shape), zero = const_tensor(0, dt, shape);
  UOpRef is_m1 = alu(Op::CmpEq, d.b, minus_one);
  UOpRef safe_b = uop::where(is_m1, one, d.b);
  d.q = uop::where(is_m1, alu(Op::Neg, d.a), alu(Op::IDiv, d.a, safe_b));
  d.r = uop::where(is_m1, zero, alu(Op::Mod, d.a, safe_b));
  return d;
}

// The remainder is nonzero and its sign differs from the divisor's: C rounded toward 0, not -inf.
UOpRef needs_floor_fix(const Division &d, DType dt) {
  UOpRef zero = const_tensor(0, dt, shape_of(d.r));
  return alu(Op::And, alu(Op::CmpNe, d.r, zero), alu(Op::CmpNe, alu(Op::CmpLt, d.r, zero), alu(Op::CmpLt, d.b, zero)));
}

Tensor bitwise(const Tensor &a, const Tensor &b, Op op, const char *name, bool allow_bool = true) {
  DType dt = integer_type(a, b, name);
  if (!allow_bool && dt == DType::Bool) unsupported_dtype(name, dt);
  auto [ua, ub] = broadcast_pair(a, b, name);
  return iterated(alu(op, cast_to(ua, dt), cast_to(ub, dt)), a, b, dt);
}

}  // namespace

Tensor Tensor::floor_divide(const Tensor &o) const {
  DType dt = result_type(*this, o);
  if (dt == DType::Bool) unsupported_dtype("floor_divide", dt);
  if (is_float(dt))  // torch records a node whose backward raises
    return autograd::apply(
        "NotImplemented", {*this, o}, [&] { return floating(*this, o, dt, float_floor_divide, "floor_divide"); },
        [](const Tensor &, const Tensor &) -> autograd::Grads {
          throw Error("derivative for aten::floor_divide is not implemented");
        });
  Division d = divide(*this, o, dt, "floor_divide");
  const UOpRef floored = alu(Op::Sub, d.q, const_tensor(1, dt, shape_of(d.q)));
  return iterated(uop::where(needs_floor_fix(d, dt), floored, d.q), *this, o, dt);
}

namespace {

using BinaryFn = Tensor (*)(const Tensor &, const Tensor &);

// A floating remainder r = a - q(a, b) * b and torch's gradient of it: g for
// a, -g * q(a, b) for b (the quotient has no gradient of its own).
Tensor floating_remainder(const Tensor &a, const Tensor &b, DType dt, const char *node, const char *op, BinaryFn r,
                          BinaryFn q) {
  return autograd::apply(
      node, {a, b}, [&] { return floating(a, b, dt, r, op); },
      [x = autograd::Saved(a, node, b.requires_grad()), y = autograd::Saved(b, node, b.requires_grad()),
       q](const Tensor &g, const Tensor &) { return autograd::Grads{g, g.neg().mul(q(x.get(), y.get()))}; });
}

}  // namespace

Tensor Tensor::remainder(const Tensor &o) const {
  DType dt = result_type(*this, o);
  if (dt == DType::Bool) unsupported_dtype("remainder", dt);
  if (is_float(dt))  // the quotient rounds toward -inf
    return floating_remainder(*this, o, dt, "RemainderBackward", "remainder", float_remainder,
                              [](const Tensor &a, const Tensor &b) { return a.floor_divide(b); });
  Division d = divide(*this, o, dt, "remainder");
  return iterated(uop::where(needs_floor_fix(d, dt), alu(Op::Add, d.r, d.b), d.r), *this, o, dt);
}

Tensor Tensor::fmod(const Tensor &o) const {
  DType dt = result_type(*this, o);
  if (dt == DType::Bool) unsupported_dtype("fmod", dt);
  if (is_float(dt))  // the quotient rounds toward zero
    return floating_remainder(*this, o, dt, "FmodBackward", "fmod", float_fmod, truncated_quotient);
  return iterated(divide(*this, o, dt, "fmod").r, *this, o, dt);
}

Tensor Tensor::bitwise_and(const Tensor &o) const { return bitwise(*this, o, Op::And, "bitwise_and"); }
Tensor Tensor::bitwise_or(const Tensor &o) const { return bitwise(*this, o, Op::Or, "bitwise_or"); }
Tensor Tensor::bitwise_xor(const Tensor &o) const { return bitwise(*this, o, Op::Xor, "bitwise_xor"); }

Tensor Tensor::bitwise_not() const {
  if (is_float(dtype())) unsupported_dtype("bitwise_not", dtype());
  if (dtype() == DType::Bool) return make_tensor(alu(Op::Not, uop()));
  return make_tensor(alu(Op::Xor, uop(), const_tensor(-1, dtype(), shape())));
}

Tensor Tensor::bitwise_left_shift(const Tensor &o) const {
  return bitwise(*this, o, Op::Shl, "bitwise_left_shift", false);
}
Tensor Tensor::bitwise_right_shift(const Tensor &o) const {
  return bitwise(*this, o, Op::Shr, "bitwise_right_shift", false);
}

}  // namespace loom
