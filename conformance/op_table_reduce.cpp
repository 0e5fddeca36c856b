// Reduction entries: dims/keepdim reductions, full max/min, argmax/argmin.
#include <numeric>

#include <set>

#include "op_table.h"

namespace loom::conformance {
namespace {

using DimsFn = Tensor (*)(const Tensor &, const Dims &, bool);

// Random dims: empty (= all) a quarter of the time, else a shuffled subset,
// sometimes written negatively. 0-d tensors accept dim 0 / -1 like torch.
Attrs dims_attrs(const CaseContext &c, Rng &rng) {
  const int64_t r = static_cast<int64_t>(c.inputs[0].shape.size());
  std::vector<int64_t> dims;
  if (!rng.coin(0.25)) {
    for (int64_t d = 0; d < std::max<int64_t>(r, 1); ++d)
      if (rng.coin()) dims.push_back(rng.coin(0.25) ? d - std::max<int64_t>(r, 1) : d);
    rng.shuffle(dims);
  }
  return Attrs().set_ints("dims", dims).set_bool("keepdim", rng.coin());
}

OpEntry dims_reduction(const std::string &name, DimsFn f, std::vector<DType> dts, Domain (*dom)(DType)) {
  OpEntry e;
  e.name = e.method = e.ref_op = name;
  e.engine = [f](const std::vector<Tensor> &x, const Attrs &a) {
    return f(x[0], a.get_ints("dims"), a.get_bool("keepdim"));
  };
  e.dtypes = std::move(dts);
  e.domain = [dom](DType dt, int, const Attrs &) { return dom(dt); };
  e.attrs = dims_attrs;
  e.reduction = true;
  return e;
}

// Products stay representable: |x| <= 2 over <= 32 ints fits int64; floats near 1.
Domain prod_domain(DType dt) {
  if (dt == DType::Bool) return {0, 1, 0, 0.1};
  if (dt == DType::UInt8) return {0, 2};
  if (!is_float(dt)) return {-2, 2};
  return {0.7, 1.4};
}

// Ties on purpose: arg reductions must return the first index.
Domain tie_domain(DType dt) {
  if (dt == DType::Bool) return {0, 1};
  if (dt == DType::UInt8) return {0, 4};
  return {-3, 3, 1};
}

OpEntry arg_reduction(const std::string &name, bool is_max) {
  OpEntry e;
  e.name = e.method = e.ref_op = name;
  e.engine = [is_max](const std::vector<Tensor> &x, const Attrs &a) {
    return is_max ? x[0].argmax(a.opt_int("dim"), a.get_bool("keepdim")) : x[0].argmin(a.opt_int("dim"), a.get_bool("keepdim"));
  };
  // torch has no bool kernel, but answers bool where it runs none (a reduced
  // dim of size 1, an empty result); elsewhere both reject.
  e.dtypes = dtypes::all;
  e.domain = [](DType dt, int, const Attrs &) { return tie_domain(dt); };
  e.attrs = [](const CaseContext &c, Rng &rng) {
    Attrs a;
    const int64_t r = std::max<int64_t>(static_cast<int64_t>(c.inputs[0].shape.size()), 1);
    if (rng.coin(0.75)) a.set_int("dim", rng.uniform(-r, r - 1));
    return a.set_bool("keepdim", rng.coin());
  };
  e.reduction = true;
  return e;
}

}  // namespace

void add_reduce_ops(std::vector<OpEntry> &t) {
  const size_t first = t.size();
  using namespace dtypes;
  t.push_back(dims_reduction("sum", [](const Tensor &x, const Dims &d, bool k) { return x.sum(d, k); }, all,
                             default_domain));
  t.push_back(dims_reduction("prod", [](const Tensor &x, const Dims &d, bool k) { return x.prod(d, k); }, all,
                             prod_domain));
  t.back().max_numel = 32;
  t.push_back(dims_reduction("mean", [](const Tensor &x, const Dims &d, bool k) { return x.mean(d, k); }, floats,
                             default_domain));
  t.push_back(dims_reduction("amax", [](const Tensor &x, const Dims &d, bool k) { return x.amax(d, k); }, all,
                             tie_domain));
  t.push_back(dims_reduction("amin", [](const Tensor &x, const Dims &d, bool k) { return x.amin(d, k); }, all,
                             tie_domain));

  OpEntry max;
  max.name = max.method = max.ref_op = "max";
  max.engine = [](const std::vector<Tensor> &x, const Attrs &) { return x[0].max(); };
  max.dtypes = all;
  max.domain = [](DType dt, int, const Attrs &) { return default_domain(dt); };
  max.reduction = true;
  t.push_back(max);
  OpEntry min = max;
  min.name = min.method = min.ref_op = "min";
  min.engine = [](const std::vector<Tensor> &x, const Attrs &) { return x[0].min(); };
  t.push_back(min);

  t.push_back(arg_reduction("argmax", true));
  t.push_back(arg_reduction("argmin", false));
  // Differentiable entries also get the backward property and finite differences.
  const std::set<std::string> differentiable = {"sum", "prod", "mean", "amax", "amin", "max", "min"};
  for (size_t i = first; i < t.size(); ++i) t[i].backward = differentiable.count(t[i].name) != 0;
}

}  // namespace loom::conformance
