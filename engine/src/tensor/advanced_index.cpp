// torch's advanced indexing with a list of indices (x[i, :, j], x[mask],
// x[i, j] = v, index_put_ with accumulate). The indexed dims are moved to the
// front and flattened into one, the indices combined into one flat position
// per element of their broadcast shape: a read is then an index_select of
// that dim (O(result) loads), a write a scatter or scatter_add into it
// (O(values) stores), and their gradients are those ops'.
#include <optional>

#include "tensor/host_check.h"
#include "tensor/ops_util.h"
#include "tensor/record.h"

namespace loom {

using namespace tensor;

namespace {

// torch's ScalarType names, as its dtype-mismatch messages spell them.
const char *scalar_type_name(DType dt) {
  static const char *const names[] = {"Bool", "Byte", "Char", "Short", "Int", "Long", "Half", "BFloat16", "Float",
                                      "Double"};
  return names[static_cast<size_t>(dt)];
}

bool is_mask(const Tensor &t) { return t.dtype() == DType::Bool || t.dtype() == DType::UInt8; }

// The coordinates where a realized mask over x's dims [at, at + mask.ndim())
// holds true: one int64 tensor per mask dim, as torch's nonzero gives them.
std::vector<Tensor> mask_coords(const Tensor &mask, const Shape &x_shape, int64_t at) {
  const Shape &m = mask.shape();
  for (size_t j = 0; j < m.size(); j++)
    if (m[j] != x_shape[static_cast<size_t>(at) + j])
      throw IndexError("The shape of the mask " + list_str(m) + " at index " + std::to_string(j) +
                       " does not match the shape of the indexed tensor " + list_str(x_shape) + " at index " +
                       std::to_string(at + static_cast<int64_t>(j)));
  const HostTensor h = mask.to_host();
  std::vector<std::vector<double>> coords(m.size());
  for (int64_t i = 0; i < h.numel(); i++) {
    if (h.get(i) == 0) continue;
    int64_t rest = i;
    for (size_t j = m.size(); j-- > 0;) {
      coords[j].push_back(static_cast<double>(rest % m[j]));
      rest /= m[j];
    }
  }
  std::vector<Tensor> out;
  for (auto &c : coords) out.push_back(Tensor::from_vector(c, {static_cast<int64_t>(c.size())}, DType::Int64));
  return out;
}

// What an index list selects of x.
struct Plan {
  std::vector<int64_t> dims;   // the indexed dims of x, increasing
  std::vector<Tensor> given;   // the index tensors as the caller gave them (saved for backward)
  std::vector<IndexLayout> layouts;  // one per indexed dim, as torch holds it (a mask's: nonzero()'s columns)
  Tensor flat;                 // int64 of the broadcast shape: the position in the indexed dims, flattened
  std::vector<int64_t> perm;   // x's dims with the indexed ones first, the rest in order
  Shape rest;                  // the sizes of the rest
  int64_t positions = 1;       // the product of the indexed dims' sizes
  Shape result;                // x.index(indices)'s shape
  Dims to_result;              // (broadcast dims, rest) -> result order
};

// Index tensors in order, each with the dim it indexes: a mask becomes one
// per dim it covers.
std::vector<std::pair<int64_t, Tensor>> index_tensors(const Tensor &x, const std::vector<std::optional<Tensor>> &indices,
                                                      Plan &p) {
  std::vector<std::pair<int64_t, Tensor>> picked;
  int64_t d = 0;
  for (const std::optional<Tensor> &ix : indices) {
    const int64_t span = ix && is_mask(*ix) ? ix->ndim() : 1;
    if (d + span > x.ndim()) {
      int64_t got = 0;
      for (const auto &i : indices) got += i && is_mask(*i) ? i->ndim() : 1;
      throw IndexError("too many indices for tensor of dimension " + std::to_string(x.ndim()) + " (got " +
                       std::to_string(got) + ")");
    }
    if (!ix) {
      d++;
      continue;
    }
    if (is_mask(*ix)) {
      if (ix->ndim() == 0) throw Error("index: a 0-d mask in an index list is not supported by loom");
      std::vector<Tensor> c = mask_coords(*ix, x.shape(), d);
      for (size_t j = 0; j < c.size(); j++) {
        picked.push_back({d + static_cast<int64_t>(j), c[j]});
        p.layouts.push_back({c[j].shape(), {ix->ndim()}});
      }
    } else if (ix->dtype() == DType::Int64 || ix->dtype() == DType::Int32) {
      picked.push_back({d, *ix});
      p.layouts.push_back({ix->shape(), ix->strides()});
    } else {
      throw IndexError("tensors used as indices must be long, byte or bool tensors");
    }
    p.given.push_back(*ix);
    d += span;
  }
  if (picked.empty()) throw Error("index: the index list holds no tensor");
  return picked;
}

Plan make_plan(const Tensor &x, const std::vector<std::optional<Tensor>> &indices) {
  Plan p;
  const std::vector<std::pair<int64_t, Tensor>> picked = index_tensors(x, indices, p);
  Shape batch = picked[0].second.shape();
  for (size_t k = 1; k < picked.size(); k++) {
    try {
      batch = broadcast_shapes(batch, picked[k].second.shape(), "index");
    } catch (const Error &) {
      std::string shapes;
      for (size_t j = 0; j < picked.size(); j++) shapes += (j ? ", " : "") + list_str(picked[j].second.shape());
      throw IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes " + shapes);
    }
  }
  std::vector<bool> indexed(static_cast<size_t>(x.ndim()), false);
  for (size_t k = 0; k < picked.size(); k++) {
    const auto [d, ix] = picked[k];
    const int64_t n = x.shape()[static_cast<size_t>(d)];
    // torch checks the values it reads (none where the broadcast shape is
    // empty) and names the index's place among the indexed dims, not x's dim.
    if (shape_numel(batch) > 0)
      check_on_host(range_ends(ix), [k, n](const HostValues &h) {
        h.each_int([&](int64_t v) {
          if (v < -n || v >= n)
            throw IndexError("index " + std::to_string(v) + " is out of bounds for dimension " + std::to_string(k) +
                             " with size " + std::to_string(n));
        });
      });
    p.dims.push_back(d);
    indexed[static_cast<size_t>(d)] = true;
    p.positions *= n;
  }
  // The flat position: the wrapped indices weighted by the indexed dims' strides.
  int64_t stride = 1;
  std::optional<Tensor> flat;
  for (size_t k = picked.size(); k-- > 0;) {
    const Tensor i64 = picked[k].second.cast(DType::Int64);
    const int64_t n = x.shape()[static_cast<size_t>(picked[k].first)];
    const Tensor wrapped = i64.lt(Tensor::zeros({}, DType::Int64)).where(i64.add(static_cast<long long>(n)), i64);
    const Tensor term = stride == 1 ? wrapped : wrapped.mul(static_cast<long long>(stride));
    flat = flat ? term.add(*flat) : term;
    stride *= n;
  }
  p.flat = flat->expand(batch);
  p.perm = p.dims;
  for (int64_t d = 0; d < x.ndim(); d++)
    if (!indexed[static_cast<size_t>(d)]) {
      p.perm.push_back(d);
      p.rest.push_back(x.shape()[static_cast<size_t>(d)]);
    }
  // Adjacent indexed dims keep their place in the result; otherwise the
  // broadcast dims come first (torch's rule).
  const bool adjacent = p.dims.back() - p.dims.front() + 1 == static_cast<int64_t>(p.dims.size());
  const int64_t b = static_cast<int64_t>(batch.size()), before = adjacent ? p.dims.front() : 0;
  for (int64_t i = 0; i < before; i++) p.to_result.push_back(b + i);
  for (int64_t i = 0; i < b; i++) p.to_result.push_back(i);
  for (int64_t i = b + before; i < b + static_cast<int64_t>(p.rest.size()); i++) p.to_result.push_back(i);
  Shape gathered = batch;
  gathered.insert(gathered.end(), p.rest.begin(), p.rest.end());
  for (int64_t d : p.to_result) p.result.push_back(gathered[static_cast<size_t>(d)]);
  return p;
}

// x with its indexed dims in front, flattened into one: (positions, rest...).
Tensor flattened(const Tensor &x, const Plan &p) {
  Shape s{p.positions};
  s.insert(s.end(), p.rest.begin(), p.rest.end());
  return x.permute(p.perm).reshape(s);
}

}  // namespace

Tensor Tensor::index(const std::vector<std::optional<Tensor>> &indices) const {
  const Plan p = make_plan(*this, indices);
  const int64_t n = p.flat.numel();
  Shape gathered = p.flat.shape();
  gathered.insert(gathered.end(), p.rest.begin(), p.rest.end());
  const Tensor got = flattened(*this, p).index_select(0, p.flat.reshape({n})).reshape(gathered).permute(p.to_result);
  // torch's layout, over the batch dims and x's dims not indexed.
  const int64_t b = p.flat.ndim();
  Dims x_dims;
  for (int64_t g : p.to_result) x_dims.push_back(g < b ? -1 : p.perm[p.dims.size() + static_cast<size_t>(g - b)]);
  return autograd::saves_inputs(laid_out(got, index_result_order(*this, x_dims, p.layouts, p.result), "IndexBackward0"),
                                p.given, "IndexBackward0");
}

Tensor Tensor::index_put(const std::vector<std::optional<Tensor>> &indices, const Tensor &values, bool accumulate) const {
  if (values.dtype() != dtype())
    throw Error(std::string("Index put requires the source and destination dtypes match, got ") +
                scalar_type_name(dtype()) + " for the destination and " + scalar_type_name(values.dtype()) +
                " for the source.");
  const Plan p = make_plan(*this, indices);
  // values broadcast to the indexing result (not the other way).
  const Shape &v = values.shape();
  bool fits = v.size() <= p.result.size();
  for (size_t i = 0; fits && i < v.size(); i++) {
    const int64_t want = p.result[p.result.size() - v.size() + i];
    fits = v[i] == want || v[i] == 1;
  }
  if (!fits)
    throw Error("shape mismatch: value tensor of shape " + list_str(v) + " cannot be broadcast to indexing result of shape " +
                list_str(p.result));
  const int64_t n = p.flat.numel();
  Shape rows{n};
  rows.insert(rows.end(), p.rest.begin(), p.rest.end());
  const Tensor src = values.expand(p.result).permute(inverse_permutation(p.to_result)).reshape(rows);
  Shape column(rows.size(), 1);
  column[0] = n;
  const Tensor at = p.flat.reshape(column).expand(rows);
  const Tensor x = flattened(*this, p);
  Tensor out = accumulate ? x.scatter_add(0, at, src) : x.scatter(0, at, src);
  Shape permuted;
  for (int64_t d : p.perm) permuted.push_back(shape()[static_cast<size_t>(d)]);
  out = out.reshape(permuted).permute(inverse_permutation(p.perm));
  // torch's result is a clone of x, written into.
  return autograd::saves_inputs(laid_out(out, clone_order(*this), "IndexPutBackward0"), p.given, "IndexPutBackward0");
}

}  // namespace loom
