// Movement entries (views; attrs from movement_gen) and creation entries.
#include "layouts.h"
#include "movement_gen.h"
#include <set>

#include "op_table.h"

namespace loom::conformance {
namespace {

OpEntry movement(const std::string &name) {
  OpEntry e;
  e.name = e.method = e.ref_op = name;
  e.engine = [name](const std::vector<Tensor> &x, const Attrs &a) { return apply_step(x[0], {name, a}); };
  e.dtypes = dtypes::all;
  e.view_op = true;
  e.domain = [](DType dt, int, const Attrs &) { return default_domain(dt); };
  e.attrs = [name](const CaseContext &c, Rng &rng) {
    // as_strided addresses torch's storage under the input: the base buffer for
    // plain views, torch's copy where one of the layout's steps copied.
    const reference::ViewInfo &info = c.torch_views[0];
    const ViewGeometry g{info.shape, c.inputs[0].dtype, info.offset, info.storage_numel};
    return movement_attrs(name, g, rng);
  };
  return e;
}

OpEntry creation(const std::string &name, EngineFn f, std::vector<DType> dts) {
  OpEntry e;
  e.name = e.method = e.ref_op = name;
  e.arity = 0;
  e.engine = std::move(f);
  e.dtypes = std::move(dts);
  e.domain = [](DType dt, int, const Attrs &) { return default_domain(dt); };
  e.attrs = [](const CaseContext &c, Rng &) { return Attrs().set_ints("shape", c.shape).set_dtype("dtype", c.dtype); };
  e.shapes = ShapeKind::None;
  return e;
}

// arange: `count` values from a start and step exactly representable in dt,
// with `end` strictly inside the last step so the length is unambiguous.
Attrs arange_attrs(const CaseContext &c, Rng &rng) {
  const int64_t count = rng.uniform(0, 20);
  Attrs a;
  Scalar start(0), step(1), end(0);
  if (is_float(c.dtype)) {
    const double st = rng.pick(std::vector<double>{0.5, 0.25, 1.5, -0.5, 1.0});
    const double s0 = 0.5 * static_cast<double>(rng.uniform(-8, 8));
    start = Scalar(s0);
    step = Scalar(st);
    end = Scalar(s0 + st * (static_cast<double>(count) - 0.5));
  } else {
    const bool unsigned_ = c.dtype == DType::UInt8;
    const int64_t st = rng.pick(unsigned_ ? std::vector<int64_t>{1, 2, 3} : std::vector<int64_t>{1, 2, 3, -1, -2});
    const int64_t s0 = unsigned_ ? rng.uniform(0, 5) : rng.uniform(-5, 5);
    start = Scalar(static_cast<long long>(s0));
    step = Scalar(static_cast<long long>(st));
    end = Scalar(static_cast<long long>(count == 0 ? s0 : s0 + (count - 1) * st + (st > 0 ? 1 : -1)));
  }
  a.set_scalar("end", end);
  const bool simple = start.to_double() == 0 && step.to_double() == 1;
  if (!simple || rng.coin()) a.set_scalar("start", start).set_scalar("step", step);
  // The default dtype is int64 for integral scalars, float32 otherwise; name it only sometimes then.
  const DType natural = is_float(c.dtype) ? DType::Float32 : DType::Int64;
  if (c.dtype != natural || rng.coin()) a.set_dtype("dtype", c.dtype);
  return a;
}

// materialize: the same values in a row-major buffer of their own (a kernel
// boundary), as torch's clone(memory_format=contiguous) (never the input
// itself, as contiguous() of a contiguous input is); its gradient passes
// through, materialized too.
OpEntry materialize() {
  OpEntry e;
  e.name = e.method = "materialize";
  e.ref_op = "clone_contiguous";
  e.engine = [](const std::vector<Tensor> &x, const Attrs &) { return x[0].materialize(); };
  e.dtypes = dtypes::all;
  e.domain = [](DType dt, int, const Attrs &) { return default_domain(dt); };
  return e;
}

}  // namespace

void add_movement_ops(std::vector<OpEntry> &t) {
  const size_t first = t.size();
  for (const std::string &op : movement_ops()) t.push_back(movement(op));
  t.push_back(movement("contiguous"));
  t.push_back(materialize());
  // Differentiable entries also get the backward property and finite differences.
  const std::set<std::string> differentiable = {"reshape", "permute", "expand", "pad", "shrink", "flip", "slice", "as_strided", "transpose", "contiguous",
                                             "materialize"};
  for (size_t i = first; i < t.size(); ++i) t[i].backward = differentiable.count(t[i].name) != 0;
}

void add_creation_ops(std::vector<OpEntry> &t) {
  using namespace dtypes;
  t.push_back(creation("empty", [](const std::vector<Tensor> &, const Attrs &a) {
    return Tensor::empty(a.get_ints("shape"), a.get_dtype("dtype"));
  }, all));
  t.back().check = Check::ShapeDtype;
  t.push_back(creation("zeros", [](const std::vector<Tensor> &, const Attrs &a) {
    return Tensor::zeros(a.get_ints("shape"), a.get_dtype("dtype"));
  }, all));
  t.push_back(creation("ones", [](const std::vector<Tensor> &, const Attrs &a) {
    return Tensor::ones(a.get_ints("shape"), a.get_dtype("dtype"));
  }, all));

  OpEntry full = creation("full", [](const std::vector<Tensor> &, const Attrs &a) {
    return Tensor::full(a.get_ints("shape"), a.get_scalar("value"), a.opt_dtype("dtype"));
  }, all);
  full.attrs = [](const CaseContext &c, Rng &rng) {
    Attrs a;
    const Scalar v = random_scalar_for(c.dtype, default_domain(c.dtype), rng);
    a.set_ints("shape", c.shape).set_scalar("value", v);
    // Without a dtype torch infers bool / int64 / float32 from the value.
    const bool inferable = c.dtype == DType::Bool || c.dtype == DType::Int64 || c.dtype == DType::Float32;
    if (!inferable || rng.coin()) a.set_dtype("dtype", c.dtype);
    return a;
  };
  t.push_back(full);

  OpEntry arange = creation("arange", [](const std::vector<Tensor> &, const Attrs &a) {
    if (!a.has("start")) return Tensor::arange(a.get_scalar("end"), a.opt_dtype("dtype"));
    return Tensor::arange(a.get_scalar("start"), a.get_scalar("end"), a.get_scalar("step"), a.opt_dtype("dtype"));
  }, no_bool);
  arange.attrs = arange_attrs;
  t.push_back(arange);

  // loom's Philox stream is not torch's: checked for shape, dtype and range; the
  // reference only says which dtypes torch accepts.
  OpEntry rand = creation("rand", [](const std::vector<Tensor> &, const Attrs &a) {
    return Tensor::rand(a.get_ints("shape"), a.get_dtype("dtype"));
  }, floats);
  rand.check = Check::Uniform01;
  t.push_back(rand);
  OpEntry randn = creation("randn", [](const std::vector<Tensor> &, const Attrs &a) {
    return Tensor::randn(a.get_ints("shape"), a.get_dtype("dtype"));
  }, floats);
  randn.check = Check::Finite;
  t.push_back(randn);
}

}  // namespace loom::conformance
