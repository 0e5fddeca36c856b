// Elementwise ops: broadcasting, torch type promotion, then one ALU node.
#include <cmath>

#include "tensor/ops_util.h"

namespace loom {

using namespace tensor;
using uop::alu;

namespace tensor {

namespace {
int category(DType d) { return d == DType::Bool ? 0 : is_float(d) ? 2 : 1; }
}  // namespace

DType result_type(const Tensor &a, const Tensor &b) {
  // torch: dimensioned tensors decide the dtype; 0-d tensors only when they raise the category.
  std::optional<DType> dim, zero;
  for (const Tensor *t : {&a, &b}) {
    auto &slot = t->ndim() > 0 ? dim : zero;
    slot = slot ? promote_types(*slot, t->dtype()) : t->dtype();
  }
  if (!dim) return *zero;
  if (!zero || category(*zero) <= category(*dim)) return *dim;
  return promote_types(*dim, *zero);
}

Shape broadcast_shapes(const Shape &sa, const Shape &sb, const char *op) {
  size_t n = std::max(sa.size(), sb.size());
  Shape out(n);
  for (size_t i = 0; i < n; i++) {
    int64_t da = i < n - sa.size() ? 1 : sa[i - (n - sa.size())];
    int64_t db = i < n - sb.size() ? 1 : sb[i - (n - sb.size())];
    if (da != db && da != 1 && db != 1)
      throw Error(std::string(op) + ": the size of tensor a (" + std::to_string(da) + ") must match the size of tensor b (" +
                  std::to_string(db) + ") at non-singleton dimension " + std::to_string(i) + "; shapes " +
                  shape_str(sa) + " and " + shape_str(sb));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::pair<UOpRef, UOpRef> broadcast_pair(const Tensor &a, const Tensor &b, const char *op) {
  Shape out = broadcast_shapes(a.shape(), b.shape(), op);
  return {a.expand(out).uop(), b.expand(out).uop()};
}

UOpRef cast_to(const UOpRef &u, DType dt) {
  if (u->dtype == dt) return u;
  // Casting a broadcast constant just retypes the constant.
  if (u->op == Op::View && u->src[0]->op == Op::Const) {
    double v = u->src[0]->const_value();
    if (dt == DType::Bool) v = v != 0;
    else if (!is_float(dt)) v = std::trunc(v);
    if (!is_float(dt) || dt == DType::Float64 || dt == DType::Float32)
      return UOp::make(Op::View, dt, {UOp::const_(dt, v)}, u->arg);
  }
  return UOp::make(Op::Cast, dt, {u});
}

void unsupported_dtype(const char *op, DType dt) {
  throw TypeError(std::string(op) + ": not implemented for dtype " + dtype_name(dt));
}

Tensor scalar_tensor(Scalar s, DType dt) { return make_tensor(const_tensor(s.to_double(), dt, {})); }

}  // namespace tensor

namespace {

Tensor binary(const Tensor &a, const Tensor &b, Op op, const char *name, DType compute) {
  auto [x, y] = broadcast_pair(a, b, name);
  return make_tensor(alu(op, cast_to(x, compute), cast_to(y, compute)));
}

DType float_result(DType d) { return is_float(d) ? d : DType::Float32; }

Tensor unary_float(const Tensor &t, Op op) {
  return make_tensor(alu(op, cast_to(t.uop(), float_result(t.dtype()))));
}

void no_bool(const Tensor &t, const char *what) {
  if (t.dtype() == DType::Bool) throw TypeError(std::string(what) + " on a bool tensor is not supported; got " + describe(t.uop()));
}

// Composite ops on half types compute in float32 and round once, as torch's kernels do.
template <typename F>
Tensor in_float32(const Tensor &t, F f) {
  DType out = float_result(t.dtype());
  if (out == DType::Float16 || out == DType::BFloat16) return f(t.cast(DType::Float32)).cast(out);
  return f(t.cast(out));
}

Tensor scalar_operand(const Tensor &t, const Scalar &s) { return scalar_tensor(s, result_type(t.dtype(), s)); }

}  // namespace

Tensor Tensor::add(const Tensor &o) const {
  DType dt = tensor::result_type(*this, o);
  return binary(*this, o, dt == DType::Bool ? Op::Or : Op::Add, "add", dt);
}
Tensor Tensor::sub(const Tensor &o) const {
  DType dt = tensor::result_type(*this, o);
  if (dtype() == DType::Bool || o.dtype() == DType::Bool)
    throw TypeError("sub: Subtraction, the `-` operator, with a bool tensor is not supported. Use the `^` or "
                    "`logical_xor()` operator instead; got " + describe(uop()) + " and " + describe(o.uop()));
  return binary(*this, o, Op::Sub, "sub", dt);
}
Tensor Tensor::mul(const Tensor &o) const {
  DType dt = tensor::result_type(*this, o);
  return binary(*this, o, dt == DType::Bool ? Op::And : Op::Mul, "mul", dt);
}
Tensor Tensor::div(const Tensor &o) const {
  return binary(*this, o, Op::Div, "div", float_result(tensor::result_type(*this, o)));
}
Tensor Tensor::pow(const Tensor &o) const {
  DType dt = tensor::result_type(*this, o);
  if (dt == DType::Bool) unsupported_dtype("pow", dt);
  return binary(*this, o, Op::Pow, "pow", dt);
}
Tensor Tensor::maximum(const Tensor &o) const {
  return binary(*this, o, Op::Max, "maximum", tensor::result_type(*this, o));
}
Tensor Tensor::minimum(const Tensor &o) const {
  return binary(*this, o, Op::Min, "minimum", tensor::result_type(*this, o));
}
Tensor Tensor::eq(const Tensor &o) const { return binary(*this, o, Op::CmpEq, "eq", tensor::result_type(*this, o)); }
Tensor Tensor::ne(const Tensor &o) const { return binary(*this, o, Op::CmpNe, "ne", tensor::result_type(*this, o)); }
Tensor Tensor::lt(const Tensor &o) const { return binary(*this, o, Op::CmpLt, "lt", tensor::result_type(*this, o)); }
Tensor Tensor::le(const Tensor &o) const { return binary(*this, o, Op::CmpLe, "le", tensor::result_type(*this, o)); }
Tensor Tensor::gt(const Tensor &o) const { return o.lt(*this); }
Tensor Tensor::ge(const Tensor &o) const { return o.le(*this); }
Tensor Tensor::logical_and(const Tensor &o) const { return binary(*this, o, Op::And, "logical_and", DType::Bool); }
Tensor Tensor::logical_or(const Tensor &o) const { return binary(*this, o, Op::Or, "logical_or", DType::Bool); }
Tensor Tensor::logical_not() const { return make_tensor(alu(Op::Not, cast_to(uop(), DType::Bool))); }

Tensor Tensor::where(const Tensor &a, const Tensor &b) const {
  DType dt = tensor::result_type(a, b);
  Shape out = broadcast_shapes(broadcast_shapes(shape(), a.shape(), "where"), b.shape(), "where");
  return make_tensor(uop::where(cast_to(expand(out).uop(), DType::Bool), cast_to(a.expand(out).uop(), dt),
                                cast_to(b.expand(out).uop(), dt)));
}

Tensor Tensor::add(Scalar o) const { return add(scalar_operand(*this, o)); }
Tensor Tensor::sub(Scalar o) const {
  if (dtype() == DType::Bool || o.kind == Scalar::Kind::Bool)
    throw TypeError("sub: Subtraction, the `-` operator, with a bool tensor is not supported. Use the `^` or "
                    "`logical_xor()` operator instead; got " + describe(uop()) + " - " + o.str());
  return sub(scalar_operand(*this, o));
}
Tensor Tensor::mul(Scalar o) const { return mul(scalar_operand(*this, o)); }
Tensor Tensor::div(Scalar o) const { return div(scalar_operand(*this, o)); }
Tensor Tensor::pow(Scalar o) const {
  if (!is_float(result_type(dtype(), o)) && o.kind != Scalar::Kind::Float && o.i < 0)
    throw Error("pow: Integers to negative integer powers are not allowed; got " + describe(uop()) + " ** " + o.str());
  return pow(scalar_operand(*this, o));
}

Tensor Tensor::neg() const {
  if (dtype() == DType::Bool)
    throw TypeError("neg: Negation, the `-` operator, on a bool tensor is not supported. Use the `~` or "
                    "`logical_not()` operator instead; got " + describe(uop()));
  return make_tensor(alu(Op::Neg, uop()));
}
Tensor Tensor::abs() const {
  no_bool(*this, "abs");
  return make_tensor(alu(Op::Abs, uop()));
}
Tensor Tensor::exp() const { return unary_float(*this, Op::Exp); }
Tensor Tensor::log() const { return unary_float(*this, Op::Log); }
Tensor Tensor::sqrt() const { return unary_float(*this, Op::Sqrt); }
Tensor Tensor::rsqrt() const {
  return in_float32(*this, [](const Tensor &x) { return make_tensor(alu(Op::Recip, x.sqrt().uop())); });
}
Tensor Tensor::sin() const { return unary_float(*this, Op::Sin); }
Tensor Tensor::cos() const { return unary_float(*this, Op::Cos); }
Tensor Tensor::tanh() const { return unary_float(*this, Op::Tanh); }
Tensor Tensor::erf() const { return unary_float(*this, Op::Erf); }

Tensor Tensor::sigmoid() const {
  return in_float32(*this, [](const Tensor &x) { return make_tensor(alu(Op::Recip, x.neg().exp().add(1).uop())); });
}

Tensor Tensor::relu() const {
  if (dtype() == DType::Bool) unsupported_dtype("relu", dtype());
  return maximum(scalar_tensor(0, dtype()));
}

Tensor Tensor::gelu(const std::string &approximate) const {
  if (!is_float(dtype())) unsupported_dtype("gelu", dtype());
  if (approximate == "none")
    return in_float32(*this, [](const Tensor &x) { return x.mul(x.mul(M_SQRT1_2).erf().add(1)).mul(0.5); });
  if (approximate == "tanh")
    return in_float32(*this, [](const Tensor &x) {
      Tensor inner = x.add(x.mul(x).mul(x).mul(0.044715)).mul(std::sqrt(2.0 / M_PI));
      return x.mul(inner.tanh().add(1)).mul(0.5);
    });
  throw ValueError("gelu: approximate must be 'none' or 'tanh', got '" + approximate + "'");
}

Tensor Tensor::cast(DType dt) const { return make_tensor(cast_to(uop(), dt)); }

Tensor operator+(const Tensor &a, const Tensor &b) { return a.add(b); }
Tensor operator-(const Tensor &a, const Tensor &b) { return a.sub(b); }
Tensor operator*(const Tensor &a, const Tensor &b) { return a.mul(b); }
Tensor operator/(const Tensor &a, const Tensor &b) { return a.div(b); }
Tensor operator-(const Tensor &a) { return a.neg(); }
Tensor operator+(const Tensor &a, Scalar b) { return a.add(b); }
Tensor operator-(const Tensor &a, Scalar b) { return a.sub(b); }
Tensor operator*(const Tensor &a, Scalar b) { return a.mul(b); }
Tensor operator/(const Tensor &a, Scalar b) { return a.div(b); }

}  // namespace loom
