// Lists of indices (torch's advanced indexing): x[i, j] reads and index_put
// writes, with integer indices and bool masks. Inputs are self, the index
// tensors, then (index_put) the values; attr "dims" gives the dim each index
// tensor starts at, "n<j>" that dim's size (index values are drawn from
// [-n, n)). A write without accumulate stores each place once (its index has
// at most one element, or is a mask): torch leaves the order of duplicate
// stores unspecified.
#include <algorithm>

#include "op_table.h"

namespace loom::conformance {
namespace {

std::vector<std::optional<Tensor>> index_list(const std::vector<Tensor> &x, const Attrs &a) {
  std::vector<std::optional<Tensor>> idx;
  const std::vector<int64_t> &dims = a.get_ints("dims");
  int64_t at = 0;
  for (size_t j = 0; j < dims.size(); j++) {
    for (; at < dims[j]; at++) idx.push_back(std::nullopt);
    const Tensor &ix = x[1 + j];
    idx.push_back(ix);
    at += ix.dtype() == DType::Bool ? ix.ndim() : 1;
  }
  return idx;
}

Tensor put(const std::vector<Tensor> &x, const Attrs &a) {
  return x[0].index_put(index_list(x, a), x[1 + a.get_ints("dims").size()], a.get_int("accumulate") != 0);
}

// Index inputs 1..m draw from [-n, n) of the dim they index; the rest as usual.
Domain list_domain(DType dt, int input, const Attrs &a) {
  const int64_t m = static_cast<int64_t>(a.get_ints("dims").size());
  if (input < 1 || input > m || dt == DType::Bool) return default_domain(dt);
  const double n = static_cast<double>(a.get_int("n" + std::to_string(input - 1)));
  return Domain{-n, n - 1};
}

Attrs dims_attrs(const std::vector<int64_t> &dims, const Shape &s, bool accumulate) {
  Attrs a;
  a.set_ints("dims", dims).set_int("accumulate", accumulate ? 1 : 0);
  for (size_t j = 0; j < dims.size(); j++) a.set_int("n" + std::to_string(j), s[static_cast<size_t>(dims[j])]);
  return a;
}

// `v` with some leading dims dropped and some dims 1: it still broadcasts to v.
Shape broadcast_down(Shape v, Rng &rng) {
  if (rng.coin(0.3)) v.erase(v.begin(), v.begin() + rng.uniform(0, static_cast<int64_t>(v.size())));
  for (int64_t &d : v)
    if (rng.coin(0.2)) d = 1;
  return v;
}

bool broadcasts_to(const Shape &v, const Shape &to) {
  if (v.size() > to.size()) return false;
  for (size_t i = 0; i < v.size(); i++)
    if (v[i] != 1 && v[i] != to[to.size() - v.size() + i]) return false;
  return true;
}

Shape with_dim(const Shape &s, size_t d, const Shape &replacement) {
  Shape out(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(d));
  out.insert(out.end(), replacement.begin(), replacement.end());
  out.insert(out.end(), s.begin() + static_cast<std::ptrdiff_t>(d) + 1, s.end());
  return out;
}

OpEntry list_entry(const std::string &name, const std::string &method, const std::string &ref, int arity) {
  OpEntry e;
  e.name = name;
  e.method = method;
  e.ref_op = ref;
  e.arity = arity;
  e.dtypes = dtypes::all;
  e.domain = list_domain;
  e.backward = true;
  e.max_numel = 32;
  return e;
}

// One integer index at some dim d, values of the result's shape (broadcast
// down sometimes); the attrs find a dim the shapes fit.
OpEntry one_index(const std::string &name, bool accumulate) {
  OpEntry e = list_entry(name, "index_put", "index_put", 3);
  e.engine = put;
  e.input_dtypes = [](DType dt) { return std::vector<DType>{dt, DType::Int64, dt}; };
  e.shape_fn = [accumulate](const Shape &case_shape, Rng &rng) {
    const Shape s = case_shape.empty() ? Shape{2} : case_shape;
    const auto d = static_cast<size_t>(rng.uniform(0, static_cast<int64_t>(s.size()) - 1));
    Shape ix(static_cast<size_t>(accumulate ? rng.uniform(1, 2) : 1));
    for (int64_t &k : ix) k = s[d] == 0 ? 0 : rng.uniform(0, accumulate ? 3 : 1);
    return std::vector<Shape>{s, ix, broadcast_down(with_dim(s, d, ix), rng)};
  };
  e.attrs = [accumulate](const CaseContext &c, Rng &rng) {
    const Shape &s = c.inputs[0].shape, &ix = c.inputs[1].shape, &v = c.inputs[2].shape;
    std::vector<int64_t> fit;
    for (size_t d = 0; d < s.size(); d++)
      if ((s[d] > 0 || shape_numel(ix) == 0) && broadcasts_to(v, with_dim(s, d, ix))) fit.push_back(static_cast<int64_t>(d));
    return dims_attrs({fit.empty() ? 0 : rng.pick(fit)}, s, accumulate);
  };
  return e;
}

// A bool mask over dims [d, d + k); values broadcast over the selected places.
OpEntry mask_index() {
  OpEntry e = list_entry("index_put_mask", "index_put", "index_put", 3);
  e.engine = put;
  e.input_dtypes = [](DType dt) { return std::vector<DType>{dt, DType::Bool, dt}; };
  e.shape_fn = [](const Shape &case_shape, Rng &rng) {
    const Shape s = case_shape.empty() ? Shape{2} : case_shape;
    const auto r = static_cast<int64_t>(s.size());
    const int64_t d = rng.uniform(0, r - 1), k = rng.uniform(1, r - d);
    return std::vector<Shape>{s, Shape(s.begin() + d, s.begin() + d + k),
                              broadcast_down(Shape(s.begin() + d + k, s.end()), rng)};
  };
  e.attrs = [](const CaseContext &c, Rng &rng) {
    const Shape &s = c.inputs[0].shape, &m = c.inputs[1].shape;
    std::vector<int64_t> fit;  // every dim the mask's shape fits at
    for (size_t d = 0; d + m.size() <= s.size(); ++d)
      if (std::equal(m.begin(), m.end(), s.begin() + static_cast<std::ptrdiff_t>(d))) fit.push_back(static_cast<int64_t>(d));
    return dims_attrs({fit.empty() ? 0 : rng.pick(fit)}, s, false);
  };
  return e;
}

// Two integer indices at dims d0 < d1 (adjacent or not), broadcast together.
std::vector<Shape> pair_shapes(const Shape &case_shape, Rng &rng, bool with_values) {
  Shape s = case_shape.size() < 2 ? Shape{3, 2} : case_shape;
  const bool empty = std::count(s.begin(), s.end(), 0) > 0;
  const int64_t k = empty ? 0 : rng.uniform(0, 3);
  std::vector<Shape> out{s, Shape{k}, rng.coin(0.3) ? Shape{1} : Shape{k}};
  if (rng.coin(0.3)) std::swap(out[1], out[2]);
  if (with_values) out.push_back(rng.coin(0.5) ? Shape{} : Shape{1});
  return out;
}

Attrs pair_attrs(const CaseContext &c, Rng &rng, bool accumulate) {
  const Shape &s = c.inputs[0].shape;
  const auto r = static_cast<int64_t>(s.size());
  const int64_t d0 = rng.uniform(0, r - 2), d1 = rng.uniform(d0 + 1, r - 1);
  return dims_attrs({d0, d1}, s, accumulate);
}

}  // namespace

void add_index_put_ops(std::vector<OpEntry> &t) {
  t.push_back(one_index("index_put", false));
  t.push_back(one_index("index_put_accumulate", true));
  t.push_back(mask_index());

  OpEntry pair = list_entry("index_put_pair", "index_put", "index_put", 4);
  pair.engine = put;
  pair.input_dtypes = [](DType dt) { return std::vector<DType>{dt, DType::Int64, DType::Int64, dt}; };
  pair.shape_fn = [](const Shape &s, Rng &rng) { return pair_shapes(s, rng, true); };
  pair.attrs = [](const CaseContext &c, Rng &rng) { return pair_attrs(c, rng, true); };
  t.push_back(pair);

  OpEntry read = list_entry("index_pair", "index", "index_list", 3);
  read.engine = [](const std::vector<Tensor> &x, const Attrs &a) { return x[0].index(index_list(x, a)); };
  read.input_dtypes = [](DType dt) { return std::vector<DType>{dt, DType::Int64, DType::Int64}; };
  read.shape_fn = [](const Shape &s, Rng &rng) { return pair_shapes(s, rng, false); };
  read.attrs = [](const CaseContext &c, Rng &rng) { return pair_attrs(c, rng, false); };
  t.push_back(read);
}

}  // namespace loom::conformance
