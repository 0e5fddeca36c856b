// Elementwise ops: broadcasting, torch type promotion, then one ALU node.
#include <algorithm>
#include <cmath>

#include "tensor/ops_util.h"
#include "tensor/record.h"

namespace loom {

using namespace tensor;
using autograd::Grads;
using autograd::Saved;
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

std::string list_str(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); i++) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
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

UOpRef broadcast_to(const Tensor &t, const Shape &out) {
  const Shape &cur = t.shape();
  if (cur == out) return t.uop();
  Shape padded(out.size(), 1);
  std::copy(cur.begin(), cur.end(), padded.end() - static_cast<std::ptrdiff_t>(cur.size()));
  // Leading size-1 dims keep any view one view (View::reshape): never a copy.
  const shape::ShapeTracker &st = uop::tracker_of(t.uop());
  shape::ShapeTracker r = padded == cur ? st : st.reshape(padded);
  return uop::view(t.uop(), padded == out ? std::move(r) : r.expand(out));
}

std::pair<UOpRef, UOpRef> broadcast_pair(const Tensor &a, const Tensor &b, const char *op) {
  if (a.shape() == b.shape()) return {a.uop(), b.uop()};  // the common case: nothing to broadcast
  const Shape out = broadcast_shapes(a.shape(), b.shape(), op);
  return {broadcast_to(a, out), broadcast_to(b, out)};
}

UOpRef cast_to(const UOpRef &u, DType dt) {
  if (u->dtype == dt) return u;
  // Casting a broadcast constant (or runtime scalar) just retypes it.
  if (u->op == Op::View && u->src[0]->op == Op::Const) {
    const UOpRef &c = u->src[0];
    double v = c->const_value();
    if (dt == DType::Bool) v = v != 0;
    else if (!is_float(dt)) v = std::trunc(v);
    if (!is_float(dt) || dt == DType::Float64 || dt == DType::Float32)
      return UOp::make(Op::View, dt,
                       {c->is_param() && (dt != DType::Bool || c->arg_as<uop::Param>().tag)
                            ? UOp::param(dt, v, c->arg_as<uop::Param>().tag)
                            : UOp::const_(dt, v)},
                       u->arg);
  }
  return UOp::make_ref(Op::Cast, dt, {&u});
}

void unsupported_dtype(const char *op, DType dt) {
  throw TypeError(std::string(op) + ": not implemented for dtype " + dtype_name(dt));
}

Tensor scalar_tensor(Scalar s, DType dt) { return make_tensor(uop::scalar_tensor(s.to_double(), dt, {})); }

}  // namespace tensor

namespace {

// `swapped`: op(b, a) (gt as lt with its operands swapped), laid out as torch
// lays out op(a, b). `common`: the dtype torch converts the operands to
// before iterating, where it is not `compute` (logical_and: their promoted
// type, not bool).
// The operands are read in place where they need no broadcast or cast (a
// copy of a node reference is an atomic update, twice).
Tensor binary(const Tensor &a, const Tensor &b, Op op, const char *name, DType compute, bool swapped = false,
              std::optional<DType> common = std::nullopt) {
  std::pair<UOpRef, UOpRef> broadcast;
  const bool same_shape = a.shape() == b.shape();
  if (!same_shape) broadcast = broadcast_pair(a, b, name);
  UOpRef cast_x, cast_y;
  const UOpRef &bx = same_shape ? a.uop() : broadcast.first, &by = same_shape ? b.uop() : broadcast.second;
  const UOpRef &x = bx->dtype == compute ? bx : (cast_x = cast_to(bx, compute));
  const UOpRef &y = by->dtype == compute ? by : (cast_y = cast_to(by, compute));
  UOpRef r = swapped ? alu(op, y, x) : alu(op, x, y);
  if (RowMajorScope::active()) return Tensor(std::move(r));  // in_iterator_layout would keep r as it is
  const DType in = common.value_or(compute);
  return Tensor(in_iterator_layout(std::move(r), {cast_to(a.uop(), in), cast_to(b.uop(), in)}));
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

// The scalar operand of an op on `t`, already broadcast to t's shape (one
// view of a runtime scalar or constant, the node a 0-d operand's broadcast
// gives): no 0-d tensor to expand, so the op makes three nodes and two
// tensors fewer. Its dtype, result_type(t, s), is the op's result dtype, as
// a 0-d operand's would be.
Tensor scalar_operand(const Tensor &t, const Scalar &s) {
  return make_tensor(uop::scalar_tensor(s.to_double(), result_type(t.dtype(), s), t.shape()));
}

// maximum/minimum: ties split the gradient in half, as torch does.
Grads extremum_grads(const Tensor &a, const Tensor &b, const Tensor &g, bool is_max) {
  Tensor zero = Tensor::zeros({}, g.dtype());
  Tensor shared = a.eq(b).where(g.div(2), g);
  Tensor a_loses = is_max ? a.lt(b) : a.gt(b), b_loses = is_max ? a.gt(b) : a.lt(b);
  return Grads{a_loses.where(zero, shared), b_loses.where(zero, shared)};
}

// A one-input op with its gradient rule rule(grad, input, output).
// `reads_input` false: the rule ignores the input, which torch then does not
// save, so an in-place update of it before backward does not raise.
template <typename F, typename R>
Tensor unary_op(const char *name, const Tensor &x, F forward, R rule, bool reads_input = true) {
  return autograd::apply(name, {x}, forward, [in = Saved(x, name, reads_input), rule](const Tensor &g, const Tensor &out) {
    return Grads{rule(g, in.get(), out)};
  });
}

// A unary op whose rule reads its output and not its input: torch saves the
// result (an in-place update of it before backward raises), not the input.
template <typename F, typename R>
Tensor result_op(const char *name, const Tensor &x, F forward, R rule) {
  return autograd::saves_result(unary_op(name, x, forward, rule, false));
}

// Rules that torch computes in float32 for half types (one rounding at the end).
template <typename R>
auto in_float32_rule(R rule) {
  return [rule](const Tensor &g, const Tensor &x, const Tensor &out) {
    DType dt = g.dtype();
    if (dt != DType::Float16 && dt != DType::BFloat16) return rule(g, x, out);
    return rule(g.cast(DType::Float32), x.cast(DType::Float32), out.cast(DType::Float32)).cast(dt);
  };
}

Tensor pow_tensors(const Tensor &self, const Tensor &o) {
  DType dt = tensor::result_type(self, o);
  if (dt == DType::Bool) unsupported_dtype("pow", dt);
  return autograd::apply(
      "PowBackward", {self, o}, [&] { return binary(self, o, Op::Pow, "pow", dt); },
      [a = Saved(self, "PowBackward"), b = Saved(o, "PowBackward")](const Tensor &g, const Tensor &out) {
        // torch: exponent 0 gives the base no gradient; a zero base with a
        // non-negative exponent gives the exponent none.
        Tensor x = a.get(), e = b.get(), zero = Tensor::zeros({}, g.dtype());
        Tensor ga = e.eq(zero).where(zero, g.mul(e.mul(x.pow(e.sub(Tensor::ones({}, e.dtype()))))));
        Tensor gb = x.eq(zero).logical_and(e.ge(zero)).where(zero, g.mul(out.mul(x.log())));
        return Grads{ga, gb};
      });
}

}  // namespace

Tensor Tensor::add(const Tensor &o) const {
  DType dt = tensor::result_type(*this, o);
  return autograd::apply(
      "AddBackward", {*this, o}, [&] { return binary(*this, o, dt == DType::Bool ? Op::Or : Op::Add, "add", dt); },
      [](const Tensor &g, const Tensor &) { return Grads{g, g}; });
}
Tensor Tensor::sub(const Tensor &o) const {
  DType dt = tensor::result_type(*this, o);
  if (dtype() == DType::Bool || o.dtype() == DType::Bool)
    throw TypeError("sub: Subtraction, the `-` operator, with a bool tensor is not supported. Use the `^` or "
                    "`logical_xor()` operator instead; got " + describe(uop()) + " and " + describe(o.uop()));
  return autograd::apply(
      "SubBackward", {*this, o}, [&] { return binary(*this, o, Op::Sub, "sub", dt); },
      [](const Tensor &g, const Tensor &) { return Grads{g, g.neg()}; });
}
Tensor Tensor::mul(const Tensor &o) const {
  DType dt = tensor::result_type(*this, o);
  return autograd::apply(
      "MulBackward", {*this, o}, [&] { return binary(*this, o, dt == DType::Bool ? Op::And : Op::Mul, "mul", dt); },
      [a = Saved(*this, "MulBackward", o.requires_grad()), b = Saved(o, "MulBackward", requires_grad())](const Tensor &g, const Tensor &) {
        return Grads{g.mul(b.get()), g.mul(a.get())};
      });
}
Tensor Tensor::div(const Tensor &o) const {
  return autograd::apply(
      "DivBackward", {*this, o}, [&] { return binary(*this, o, Op::Div, "div", float_result(tensor::result_type(*this, o))); },
      [a = Saved(*this, "DivBackward", o.requires_grad()), b = Saved(o, "DivBackward")](const Tensor &g, const Tensor &) {
        Tensor bv = b.get();
        return Grads{g.div(bv), g.neg().mul(a.get()).div(bv.mul(bv))};
      });
}
// torch's pow.Tensor_Tensor saves its result (the exponent's gradient reads
// it); pow.Tensor_Scalar does not.
Tensor Tensor::pow(const Tensor &o) const { return autograd::saves_result(pow_tensors(*this, o)); }
Tensor Tensor::maximum(const Tensor &o) const {
  return autograd::apply(
      "MaximumBackward", {*this, o}, [&] { return binary(*this, o, Op::Max, "maximum", tensor::result_type(*this, o)); },
      [a = Saved(*this, "MaximumBackward"), b = Saved(o, "MaximumBackward")](const Tensor &g, const Tensor &) {
        return extremum_grads(a.get(), b.get(), g, true);
      });
}
Tensor Tensor::minimum(const Tensor &o) const {
  return autograd::apply(
      "MinimumBackward", {*this, o}, [&] { return binary(*this, o, Op::Min, "minimum", tensor::result_type(*this, o)); },
      [a = Saved(*this, "MinimumBackward"), b = Saved(o, "MinimumBackward")](const Tensor &g, const Tensor &) {
        return extremum_grads(a.get(), b.get(), g, false);
      });
}
Tensor Tensor::eq(const Tensor &o) const { return binary(*this, o, Op::CmpEq, "eq", tensor::result_type(*this, o)); }
Tensor Tensor::ne(const Tensor &o) const { return binary(*this, o, Op::CmpNe, "ne", tensor::result_type(*this, o)); }
Tensor Tensor::lt(const Tensor &o) const { return binary(*this, o, Op::CmpLt, "lt", tensor::result_type(*this, o)); }
Tensor Tensor::le(const Tensor &o) const { return binary(*this, o, Op::CmpLe, "le", tensor::result_type(*this, o)); }
Tensor Tensor::gt(const Tensor &o) const {
  return binary(*this, o, Op::CmpLt, "gt", tensor::result_type(*this, o), true);
}
Tensor Tensor::ge(const Tensor &o) const {
  return binary(*this, o, Op::CmpLe, "ge", tensor::result_type(*this, o), true);
}
Tensor Tensor::logical_and(const Tensor &o) const {
  return binary(*this, o, Op::And, "logical_and", DType::Bool, false, tensor::result_type(*this, o));
}
Tensor Tensor::logical_or(const Tensor &o) const {
  return binary(*this, o, Op::Or, "logical_or", DType::Bool, false, tensor::result_type(*this, o));
}
Tensor Tensor::logical_not() const { return make_tensor(alu(Op::Not, cast_to(uop(), DType::Bool))); }

Tensor Tensor::where(const Tensor &a, const Tensor &b) const {
  DType dt = tensor::result_type(a, b);
  Shape out = broadcast_shapes(broadcast_shapes(shape(), a.shape(), "where"), b.shape(), "where");
  return autograd::apply(
      "WhereBackward", {*this, a, b},
      [&] {
        return Tensor(in_iterator_layout(uop::where(cast_to(expand(out).uop(), DType::Bool),
                                                    cast_to(a.expand(out).uop(), dt), cast_to(b.expand(out).uop(), dt)),
                                         {uop(), cast_to(a.uop(), dt), cast_to(b.uop(), dt)}));
      },
      [cond = Saved(*this, "WhereBackward")](const Tensor &g, const Tensor &) {
        Tensor zero = Tensor::zeros({}, g.dtype()), c = cond.get();
        return Grads{std::nullopt, c.where(g, zero), c.where(zero, g)};
      });
}

Tensor tensor::mul_add(const Tensor &a, const Tensor &b, const Tensor &c) {
  const DType dt = float_result(promote_types(result_type(a, b), c.dtype()));
  const Shape out = broadcast_shapes(broadcast_shapes(a.shape(), b.shape(), "mul_add"), c.shape(), "mul_add");
  return autograd::apply(
      "MulAddBackward", {a, b, c},
      [&] {
        return Tensor(in_iterator_layout(
            uop::mul_add(cast_to(a.expand(out).uop(), dt), cast_to(b.expand(out).uop(), dt), cast_to(c.expand(out).uop(), dt)),
            {cast_to(a.uop(), dt), cast_to(b.uop(), dt), cast_to(c.uop(), dt)}));
      },
      [sa = Saved(a, "MulAddBackward", b.requires_grad()), sb = Saved(b, "MulAddBackward", a.requires_grad())](
          const Tensor &g, const Tensor &) { return Grads{g.mul(sb.get()), g.mul(sa.get()), g}; });
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
  return pow_tensors(*this, scalar_operand(*this, o));
}

Tensor Tensor::neg() const {
  if (dtype() == DType::Bool)
    throw TypeError("neg: Negation, the `-` operator, on a bool tensor is not supported. Use the `~` or "
                    "`logical_not()` operator instead; got " + describe(uop()));
  return unary_op("NegBackward", *this, [&] { return make_tensor(alu(Op::Neg, uop())); },
                  [](const Tensor &g, const Tensor &, const Tensor &) { return g.neg(); }, false);
}
Tensor Tensor::abs() const {
  no_bool(*this, "abs");
  return unary_op("AbsBackward", *this, [&] { return make_tensor(alu(Op::Abs, uop())); },
                  [](const Tensor &g, const Tensor &x, const Tensor &) {
                    Tensor zero = Tensor::zeros({}, x.dtype());
                    return g.mul(x.gt(zero).cast(g.dtype()).sub(x.lt(zero).cast(g.dtype())));
                  });
}
Tensor Tensor::exp() const {
  return result_op("ExpBackward", *this, [&] { return unary_float(*this, Op::Exp); },
                   [](const Tensor &g, const Tensor &, const Tensor &out) { return g.mul(out); });
}
Tensor Tensor::log() const {
  return unary_op("LogBackward", *this, [&] { return unary_float(*this, Op::Log); },
                  [](const Tensor &g, const Tensor &x, const Tensor &) { return g.div(x); });
}
Tensor Tensor::sqrt() const {
  return result_op("SqrtBackward", *this, [&] { return unary_float(*this, Op::Sqrt); },
                   [](const Tensor &g, const Tensor &, const Tensor &out) { return g.div(out.mul(2)); });
}
Tensor Tensor::rsqrt() const {
  return result_op(
      "RsqrtBackward", *this,
      [&] { return in_float32(*this, [](const Tensor &x) { return make_tensor(alu(Op::Recip, x.sqrt().uop())); }); },
      [](const Tensor &g, const Tensor &, const Tensor &out) { return g.mul(out.pow(3)).mul(-0.5); });
}
Tensor Tensor::sin() const {
  return unary_op("SinBackward", *this, [&] { return unary_float(*this, Op::Sin); },
                  [](const Tensor &g, const Tensor &x, const Tensor &) { return g.mul(x.cos()); });
}
Tensor Tensor::cos() const {
  return unary_op("CosBackward", *this, [&] { return unary_float(*this, Op::Cos); },
                  [](const Tensor &g, const Tensor &x, const Tensor &) { return g.mul(x.sin().neg()); });
}
Tensor Tensor::tanh() const {
  return result_op("TanhBackward", *this, [&] { return unary_float(*this, Op::Tanh); },
                   [](const Tensor &g, const Tensor &, const Tensor &out) {
                     return g.mul(Tensor::ones({}, out.dtype()).sub(out.mul(out)));
                   });
}
Tensor Tensor::erf() const {
  return unary_op("ErfBackward", *this, [&] { return unary_float(*this, Op::Erf); },
                  [](const Tensor &g, const Tensor &x, const Tensor &) {
                    return g.mul(x.mul(x).neg().exp().mul(M_2_SQRTPI));
                  });
}

Tensor Tensor::sigmoid() const {
  return result_op(
      "SigmoidBackward", *this,
      [&] { return in_float32(*this, [](const Tensor &x) { return make_tensor(alu(Op::Recip, x.neg().exp().add(1).uop())); }); },
      in_float32_rule([](const Tensor &g, const Tensor &, const Tensor &out) {
        return g.mul(Tensor::ones({}, out.dtype()).sub(out).mul(out));
      }));
}

Tensor Tensor::relu() const {
  if (dtype() == DType::Bool) unsupported_dtype("relu", dtype());
  // torch's threshold_backward: no gradient where the output is not positive.
  return result_op("ReluBackward", *this, [&] { return maximum(scalar_tensor(0, dtype())); },
                   [](const Tensor &g, const Tensor &, const Tensor &out) {
                     return out.gt(Tensor::zeros({}, out.dtype())).where(g, Tensor::zeros({}, g.dtype()));
                   });
}

Tensor Tensor::gelu(const std::string &approximate) const {
  if (!is_float(dtype())) unsupported_dtype("gelu", dtype());
  if (approximate != "none" && approximate != "tanh")
    throw ValueError("gelu: approximate must be 'none' or 'tanh', got '" + approximate + "'");
  const bool exact = approximate == "none";
  constexpr double kBeta = 0.7978845608028654;  // sqrt(2 / pi)
  constexpr double kKappa = 0.044715;
  auto forward = [&] {
    if (exact) return in_float32(*this, [](const Tensor &x) { return x.mul(x.mul(M_SQRT1_2).erf().add(1)).mul(0.5); });
    return in_float32(*this, [](const Tensor &x) {
      Tensor inner = x.add(x.mul(x).mul(x).mul(kKappa)).mul(kBeta);
      return x.mul(inner.tanh().add(1)).mul(0.5);
    });
  };
  // torch's gelu_backward formulas.
  return unary_op("GeluBackward", *this, forward, in_float32_rule([exact](const Tensor &g, const Tensor &x, const Tensor &) {
                    if (exact) {
                      Tensor cdf = x.mul(M_SQRT1_2).erf().add(1).mul(0.5);
                      Tensor pdf = x.mul(x).mul(-0.5).exp().mul(M_2_SQRTPI * M_SQRT1_2 * 0.5);
                      return g.mul(cdf.add(x.mul(pdf)));
                    }
                    Tensor x_sq = x.mul(x);
                    Tensor tanh_inner = x.add(x_sq.mul(x).mul(kKappa)).mul(kBeta).tanh();
                    Tensor left = x.mul(0.5), right = tanh_inner.add(1);
                    Tensor right_derivative = left.mul(tanh_inner.mul(tanh_inner).neg().add(1));
                    Tensor inner_derivative = x_sq.mul(3 * kKappa).add(1).mul(kBeta);
                    return g.mul(right.mul(0.5).add(right_derivative.mul(inner_derivative)));
                  }));
}

Tensor Tensor::cast(DType dt) const {
  if (dt == dtype()) return *this;
  return autograd::apply("ToCopyBackward", {*this}, [&] { return make_tensor(cast_to(uop(), dt)); },
                         [](const Tensor &g, const Tensor &) { return Grads{g}; });
}

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
