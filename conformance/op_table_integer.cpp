// Integer semantics: floor division, remainder (rounding toward -inf) and fmod
// (toward zero), bitwise ops and shifts, and wrap-around of add/mul over full-range values.
#include "op_table.h"

namespace loom::conformance {
namespace {

const std::vector<DType> kInts = {DType::UInt8, DType::Int8, DType::Int16, DType::Int32, DType::Int64};

int bits_of(DType dt) { return static_cast<int>(itemsize(dt)) * 8; }

// Every value the dtype holds is likely: overflow is the point.
Domain full_range(DType dt) {
  if (dt == DType::Bool) return {0, 1};
  if (is_float(dt)) return default_domain(dt);
  const double half = std::ldexp(1.0, bits_of(dt) - 1);
  if (dt == DType::UInt8) return {0, 255};
  return {-half, half - 1};
}

OpEntry binary_int(const std::string &name, const std::string &method, Tensor (Tensor::*f)(const Tensor &) const,
                   std::vector<DType> dts, DomainFn domain) {
  OpEntry e;
  e.name = name;
  e.method = method;
  e.ref_op = method;
  e.arity = 2;
  e.engine = [f](const std::vector<Tensor> &x, const Attrs &) { return (x[0].*f)(x[1]); };
  e.dtypes = std::move(dts);
  e.domain = std::move(domain);
  e.shapes = ShapeKind::Broadcast;
  return e;
}

}  // namespace

void add_integer_ops(std::vector<OpEntry> &t) {
  std::vector<DType> ints_bool = kInts;
  ints_bool.push_back(DType::Bool);
  // Divisors stay nonzero (a zero divisor raises; see the error tests); the
  // dividends span the dtype, so the most negative value / -1 happens.
  auto division_domain = [](DType dt, int input, const Attrs &) {
    if (is_float(dt)) {
      Domain d = default_domain(dt);
      d.grid = 0.25;  // exact multiples, so quotients land on integers too
      if (input == 1) d.min_abs = 0.25;
      return d;
    }
    if (input == 0) return full_range(dt);
    Domain d{-9, 9};
    if (dt == DType::UInt8) d = {1, 9};
    d.min_abs = 1;
    return d;
  };
  std::vector<DType> numbers = kInts;
  numbers.insert(numbers.end(), dtypes::floats.begin(), dtypes::floats.end());
  t.push_back(binary_int("floor_divide", "floor_divide", &Tensor::floor_divide, numbers, division_domain));
  t.push_back(binary_int("remainder", "remainder", &Tensor::remainder, numbers, division_domain));
  t.back().backward = true;  // torch differentiates remainder (not floor_divide)
  t.push_back(binary_int("fmod", "fmod", &Tensor::fmod, numbers, division_domain));
  t.back().backward = true;
  auto bits_domain = [](DType dt, int, const Attrs &) { return full_range(dt); };
  t.push_back(binary_int("bitwise_and", "bitwise_and", &Tensor::bitwise_and, ints_bool, bits_domain));
  t.push_back(binary_int("bitwise_or", "bitwise_or", &Tensor::bitwise_or, ints_bool, bits_domain));
  t.push_back(binary_int("bitwise_xor", "bitwise_xor", &Tensor::bitwise_xor, ints_bool, bits_domain));
  // Shift counts within the type's width (torch's kernels leave wider counts to the hardware).
  auto shift_domain = [](DType dt, int input, const Attrs &) {
    if (input == 0) return full_range(dt);
    return Domain{0, static_cast<double>(bits_of(dt) - 1)};
  };
  t.push_back(binary_int("bitwise_left_shift", "bitwise_left_shift", &Tensor::bitwise_left_shift, kInts, shift_domain));
  t.push_back(binary_int("bitwise_right_shift", "bitwise_right_shift", &Tensor::bitwise_right_shift, kInts, shift_domain));
  // The same methods as add/mul/sub (so the same dtypes, and their gradients
  // on floats), over full-range values.
  t.push_back(binary_int("add_wrap", "add", &Tensor::add, dtypes::all, bits_domain));
  t.push_back(binary_int("mul_wrap", "mul", &Tensor::mul, dtypes::all, bits_domain));
  t.push_back(binary_int("sub_wrap", "sub", &Tensor::sub, dtypes::no_bool, bits_domain));
  for (size_t i = t.size() - 3; i < t.size(); ++i) t[i].backward = true;

  OpEntry bnot;
  bnot.name = bnot.method = bnot.ref_op = "bitwise_not";
  bnot.engine = [](const std::vector<Tensor> &x, const Attrs &) { return x[0].bitwise_not(); };
  bnot.dtypes = ints_bool;
  bnot.domain = bits_domain;
  t.push_back(bnot);
}

}  // namespace loom::conformance
