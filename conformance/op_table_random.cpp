// Random entries beyond rand/randn. loom's Philox stream is not torch's, so
// values are checked for range (or for being a permutation), not compared.
// The in-place ones run in torch too, so an input torch refuses to write
// (a broadcast view) must be refused by the engine as well.
#include "op_table.h"

namespace loom::conformance {
namespace {

// low/high (at least two values apart, so a draw of 8 is never all equal),
// shape and dtype; `integral`: the values must be integers. Bool holds only
// [0, 2).
Attrs range_attrs(const CaseContext &c, Rng &rng, bool integral) {
  const int64_t low = c.dtype == DType::Bool ? 0 : c.dtype == DType::UInt8 ? rng.uniform(0, 5) : rng.uniform(-6, 5);
  return Attrs()
      .set_int("low", low)
      .set_int("high", c.dtype == DType::Bool ? 2 : low + rng.uniform(2, 9))
      .set_ints("shape", c.shape)
      .set_dtype("dtype", c.dtype)
      .set_bool("integral", integral);
}
Attrs integer_range(const CaseContext &c, Rng &rng) { return range_attrs(c, rng, true); }
Attrs real_range(const CaseContext &c, Rng &rng) { return range_attrs(c, rng, false); }

OpEntry random_entry(const std::string &name, EngineFn f, std::vector<DType> dts, Check check, AttrGen attrs) {
  OpEntry e;
  e.name = e.method = e.ref_op = name;
  e.engine = std::move(f);
  e.dtypes = std::move(dts);
  e.domain = [](DType dt, int, const Attrs &) { return default_domain(dt); };
  e.attrs = std::move(attrs);
  e.check = check;
  return e;
}

// In place on the (viewed) input, which is returned.
OpEntry in_place(const std::string &name, Tensor &(*f)(Tensor &, const Attrs &), std::vector<DType> dts,
                 AttrGen attrs) {
  OpEntry e = random_entry(
      name, [f](const std::vector<Tensor> &x, const Attrs &a) {
        Tensor t = x[0];
        return f(t, a);
      },
      std::move(dts), Check::InRange, std::move(attrs));
  e.arity = 1;
  return e;
}

}  // namespace

void add_random_ops(std::vector<OpEntry> &t) {
  using namespace dtypes;
  // randint and random_ take every dtype; bool draws from [0, 2) (range_attrs).

  OpEntry randint = random_entry(
      "randint", [](const std::vector<Tensor> &, const Attrs &a) {
        return Tensor::randint(a.get_int("low"), a.get_int("high"), a.get_ints("shape"), a.get_dtype("dtype"));
      },
      all, Check::InRange, integer_range);
  randint.arity = 0;
  randint.shapes = ShapeKind::None;
  t.push_back(randint);

  OpEntry randperm = random_entry(
      "randperm", [](const std::vector<Tensor> &, const Attrs &a) {
        return Tensor::randperm(a.get_int("n"), a.get_dtype("dtype"));
      },
      dtypes::no_bool, Check::Permutation,
      [](const CaseContext &c, Rng &) { return Attrs().set_int("n", shape_numel(c.shape)).set_dtype("dtype", c.dtype); });
  randperm.arity = 0;
  randperm.shapes = ShapeKind::None;
  t.push_back(randperm);

  t.push_back(in_place(
      "uniform_", [](Tensor &x, const Attrs &a) -> Tensor & {
        return x.uniform_(static_cast<double>(a.get_int("low")), static_cast<double>(a.get_int("high")));
      },
      floats, real_range));
  // N(mean, std) has no bounded range: checked as finite.
  OpEntry normal = in_place(
      "normal_", [](Tensor &x, const Attrs &a) -> Tensor & { return x.normal_(a.get_double("mean"), a.get_double("std")); },
      floats, [](const CaseContext &, Rng &rng) {
        return Attrs().set_double("mean", rng.real(-3, 3)).set_double("std", rng.real(0.1, 2));
      });
  normal.check = Check::Finite;
  t.push_back(normal);
  t.push_back(in_place(
      "random_", [](Tensor &x, const Attrs &a) -> Tensor & { return x.random_(a.get_int("low"), a.get_int("high")); },
      all, integer_range));
}

}  // namespace loom::conformance
