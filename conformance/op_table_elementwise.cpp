// Elementwise entries: binary (broadcasting), scalar overloads, unary, where, cast.
#include <cmath>

#include <set>

#include "op_table.h"

namespace loom::conformance {
namespace {

using Binary = Tensor (*)(const Tensor &, const Tensor &);
using Unary = Tensor (*)(const Tensor &);

DomainFn same_domain(Domain (*f)(DType)) {
  return [f](DType dt, int, const Attrs &) { return f(dt); };
}

// Small integer-valued grid so ties, equalities and zeros happen.
Domain compare_domain(DType dt) {
  if (dt == DType::Bool) return {0, 1};
  if (dt == DType::UInt8) return {0, 3, 1};
  return {-2, 2, is_float(dt) ? 0.5 : 1};
}

Domain truthy_domain(DType dt) {
  Domain d = default_domain(dt);
  d.zero_prob = 0.35;
  return d;
}

Domain positive_domain(DType dt) {
  if (dt == DType::Bool) return {0, 1};
  if (!is_float(dt)) return {1, 12};
  return {0.05, 10};
}

OpEntry binary(const std::string &name, Binary f, std::vector<DType> dts, DomainFn dom = {}) {
  OpEntry e;
  e.name = e.method = e.ref_op = name;
  e.arity = 2;
  e.engine = [f](const std::vector<Tensor> &x, const Attrs &) { return f(x[0], x[1]); };
  e.dtypes = std::move(dts);
  e.domain = dom ? dom : same_domain(default_domain);
  e.shapes = ShapeKind::Broadcast;
  return e;
}

OpEntry unary(const std::string &name, Unary f, std::vector<DType> dts, Domain (*dom)(DType) = default_domain) {
  OpEntry e;
  e.name = e.method = e.ref_op = name;
  e.engine = [f](const std::vector<Tensor> &x, const Attrs &) { return f(x[0]); };
  e.dtypes = std::move(dts);
  e.domain = same_domain(dom);
  return e;
}

// The Scalar overload of a binary method: attr "scalar" (kind chosen by `scalar`).
OpEntry scalar_op(const std::string &method, Tensor (*f)(const Tensor &, Scalar), std::vector<DType> dts,
                  std::function<Scalar(DType, Rng &)> scalar, DomainFn dom = {}) {
  OpEntry e;
  e.name = method + "_scalar";
  e.method = e.ref_op = method;
  e.engine = [f](const std::vector<Tensor> &x, const Attrs &a) { return f(x[0], a.get_scalar("scalar")); };
  e.dtypes = std::move(dts);
  e.domain = dom ? dom : same_domain(default_domain);
  e.attrs = [scalar](const CaseContext &c, Rng &rng) { return Attrs().set_scalar("scalar", scalar(c.dtype, rng)); };
  return e;
}

// Any kind: the scalar's kind drives torch's result type (int tensor + 2.5 -> float32).
Scalar any_scalar(bool allow_bool, bool nonzero, Rng &rng) {
  const int64_t kind = rng.uniform(allow_bool ? 0 : 1, 2);
  if (kind == 0) return Scalar(nonzero ? true : rng.coin());
  if (kind == 1) {
    int64_t v = 0;
    while (v == 0) v = rng.uniform(-4, 5);
    return Scalar(static_cast<long long>(nonzero || rng.coin(0.9) ? v : 0));
  }
  return Scalar(rng.pick(std::vector<double>{2.5, -1.25, 0.5, 3.0, -0.75, 0.1}));
}

Domain pow_domain(DType dt, int input) {
  if (dt == DType::UInt8) return {0, 3};
  if (!is_float(dt)) return input == 0 ? Domain{-3, 3} : Domain{0, 3};  // no negative integer powers
  return input == 0 ? Domain{0.5, 2.5} : Domain{-2, 2};
}

Domain cast_domain(DType src, DType target) {
  if (src == DType::Bool) return {0, 1};
  Domain d{-100, 100};
  d.zero_prob = 0.1;
  // float -> uint8 of a negative value is undefined in C (torch too): keep it in range.
  if (is_float(src) && target == DType::UInt8) d.lo = 0;
  return d;
}

}  // namespace

void add_elementwise_ops(std::vector<OpEntry> &t) {
  const size_t first = t.size();
  using namespace dtypes;
  const DomainFn cmp = same_domain(compare_domain);
  t.push_back(binary("add", [](const Tensor &a, const Tensor &b) { return a.add(b); }, all));
  t.push_back(binary("sub", [](const Tensor &a, const Tensor &b) { return a.sub(b); }, no_bool));
  t.push_back(binary("mul", [](const Tensor &a, const Tensor &b) { return a.mul(b); }, all));
  t.push_back(binary("div", [](const Tensor &a, const Tensor &b) { return a.div(b); }, all,
                     [](DType dt, int input, const Attrs &) {
                       Domain d = default_domain(dt);
                       if (input == 1) d.min_abs = is_float(dt) ? 0.25 : 1;  // true division by zero is inf: legal but dull
                       return d;
                     }));
  t.push_back(binary("pow", [](const Tensor &a, const Tensor &b) { return a.pow(b); }, no_bool,
                     [](DType dt, int input, const Attrs &) { return pow_domain(dt, input); }));
  t.back().tol_scale = 2;
  t.push_back(binary("maximum", [](const Tensor &a, const Tensor &b) { return a.maximum(b); }, all, cmp));
  t.push_back(binary("minimum", [](const Tensor &a, const Tensor &b) { return a.minimum(b); }, all, cmp));
  t.push_back(binary("eq", [](const Tensor &a, const Tensor &b) { return a.eq(b); }, all, cmp));
  t.push_back(binary("ne", [](const Tensor &a, const Tensor &b) { return a.ne(b); }, all, cmp));
  t.push_back(binary("lt", [](const Tensor &a, const Tensor &b) { return a.lt(b); }, all, cmp));
  t.push_back(binary("le", [](const Tensor &a, const Tensor &b) { return a.le(b); }, all, cmp));
  t.push_back(binary("gt", [](const Tensor &a, const Tensor &b) { return a.gt(b); }, all, cmp));
  t.push_back(binary("ge", [](const Tensor &a, const Tensor &b) { return a.ge(b); }, all, cmp));
  t.push_back(binary("logical_and", [](const Tensor &a, const Tensor &b) { return a.logical_and(b); }, all,
                     same_domain(truthy_domain)));
  t.push_back(binary("logical_or", [](const Tensor &a, const Tensor &b) { return a.logical_or(b); }, all,
                     same_domain(truthy_domain)));

  OpEntry where;
  where.name = where.method = where.ref_op = "where";
  where.arity = 3;
  where.engine = [](const std::vector<Tensor> &x, const Attrs &) { return x[0].where(x[1], x[2]); };
  where.dtypes = all;
  where.domain = [](DType dt, int input, const Attrs &) { return input == 0 ? Domain{0, 1} : default_domain(dt); };
  where.input_dtypes = [](DType dt) { return std::vector<DType>{DType::Bool, dt, dt}; };
  where.shapes = ShapeKind::Broadcast;
  t.push_back(where);

  t.push_back(scalar_op("add", [](const Tensor &a, Scalar s) { return a.add(s); }, all,
                        [](DType, Rng &rng) { return any_scalar(true, false, rng); }));
  // torch rejects bool in subtraction, the scalar included.
  t.push_back(scalar_op("sub", [](const Tensor &a, Scalar s) { return a.sub(s); }, no_bool,
                        [](DType, Rng &rng) { return any_scalar(false, false, rng); }));
  t.push_back(scalar_op("mul", [](const Tensor &a, Scalar s) { return a.mul(s); }, all,
                        [](DType, Rng &rng) { return any_scalar(true, false, rng); }));
  t.push_back(scalar_op("div", [](const Tensor &a, Scalar s) { return a.div(s); }, all,
                        [](DType, Rng &rng) { return any_scalar(true, true, rng); }));
  t.push_back(scalar_op(
      "pow", [](const Tensor &a, Scalar s) { return a.pow(s); }, all,
      [](DType dt, Rng &rng) {
        if (rng.coin(0.5)) return Scalar(static_cast<long long>(rng.uniform(0, 3)));
        return Scalar(rng.pick(std::vector<double>{0.5, 2.0, -1.0, 1.5, -0.5}));
      },
      [](DType dt, int, const Attrs &a) {
        const Scalar s = a.get_scalar("scalar");
        if (s.kind == Scalar::Kind::Float) {
          Domain d = positive_domain(dt);  // fractional powers of negatives are NaN; keep them real
          if (is_float(dt)) d = {0.25, 3};
          return d;
        }
        return pow_domain(dt, 0);
      }));
  t.back().tol_scale = 2;

  t.push_back(unary("logical_not", [](const Tensor &a) { return a.logical_not(); }, all, truthy_domain));
  t.push_back(unary("neg", [](const Tensor &a) { return a.neg(); }, no_bool));
  t.push_back(unary("abs", [](const Tensor &a) { return a.abs(); }, no_bool));
  t.push_back(unary("exp", [](const Tensor &a) { return a.exp(); }, all));
  t.push_back(unary("log", [](const Tensor &a) { return a.log(); }, all, positive_domain));
  t.push_back(unary("sqrt", [](const Tensor &a) { return a.sqrt(); }, all, positive_domain));
  t.push_back(unary("rsqrt", [](const Tensor &a) { return a.rsqrt(); }, all, positive_domain));
  t.push_back(unary("sin", [](const Tensor &a) { return a.sin(); }, all));
  t.push_back(unary("cos", [](const Tensor &a) { return a.cos(); }, all));
  t.push_back(unary("tanh", [](const Tensor &a) { return a.tanh(); }, all));
  t.push_back(unary("sigmoid", [](const Tensor &a) { return a.sigmoid(); }, all));
  t.push_back(unary("relu", [](const Tensor &a) { return a.relu(); }, no_bool));
  t.push_back(unary("erf", [](const Tensor &a) { return a.erf(); }, all));

  OpEntry gelu = unary("gelu", nullptr, floats);
  gelu.engine = [](const std::vector<Tensor> &x, const Attrs &a) { return x[0].gelu(a.get_string("approximate")); };
  gelu.attrs = [](const CaseContext &, Rng &rng) {
    return Attrs().set_string("approximate", rng.coin() ? "none" : "tanh");
  };
  t.push_back(gelu);

  OpEntry cast = unary("cast", nullptr, all);
  cast.engine = [](const std::vector<Tensor> &x, const Attrs &a) { return x[0].cast(a.get_dtype("dtype")); };
  cast.attrs = [](const CaseContext &, Rng &rng) { return Attrs().set_dtype("dtype", rng.pick(dtypes::all)); };
  cast.domain = [](DType dt, int, const Attrs &a) { return cast_domain(dt, a.get_dtype("dtype")); };
  t.push_back(cast);
  // Every entry but the comparisons and logical ops (which torch does not
  // differentiate) also gets the backward property and finite differences:
  // a new op is checked backward unless it is listed here.
  const std::set<std::string> no_gradient = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not"};
  for (size_t i = first; i < t.size(); ++i) t[i].backward = no_gradient.count(t[i].name) == 0;
}

}  // namespace loom::conformance
