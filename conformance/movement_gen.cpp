#include "movement_gen.h"

#include <numeric>
#include <stdexcept>

#include "torch_views.h"

namespace loom::conformance {
namespace {

using reference::Attrs;

int64_t ndim_of(const ViewGeometry &g) { return static_cast<int64_t>(g.shape.size()); }

// A dim index, sometimes written negatively (torch wraps them; so must loom).
int64_t some_dim(int64_t d, int64_t ndim, Rng &rng) { return rng.coin(0.25) ? d - std::max<int64_t>(ndim, 1) : d; }

std::vector<int64_t> prime_factors(int64_t n) {
  std::vector<int64_t> f;
  for (int64_t p = 2; p * p <= n; ++p)
    while (n % p == 0) f.push_back(p), n /= p;
  if (n > 1) f.push_back(n);
  return f;
}

Attrs reshape_attrs(const ViewGeometry &g, Rng &rng) {
  const int64_t n = shape_numel(g.shape);
  Shape out;
  if (n == 0) {
    const int64_t rank = rng.uniform(1, 4);
    for (int64_t i = 0; i < rank; ++i) out.push_back(rng.uniform(1, 3));
    out[rng.uniform(0, rank - 1)] = 0;
    return Attrs().set_ints("shape", out);
  }
  std::vector<int64_t> f = prime_factors(n);
  const int64_t rank = rng.uniform(f.empty() ? 0 : 1, 5);
  out.assign(rank, 1);
  for (int64_t p : f) out[rng.uniform(0, rank - 1)] *= p;
  if (rank && rng.coin(0.3)) out[rng.uniform(0, rank - 1)] = -1;
  return Attrs().set_ints("shape", out);
}

Attrs permute_attrs(const ViewGeometry &g, Rng &rng) {
  std::vector<int64_t> order(g.shape.size());
  std::iota(order.begin(), order.end(), 0);
  rng.shuffle(order);
  for (int64_t &d : order) d = some_dim(d, ndim_of(g), rng);
  return Attrs().set_ints("order", order);
}

Attrs expand_attrs(const ViewGeometry &g, Rng &rng, int64_t max_numel) {
  for (int attempt = 0;; ++attempt) {
    Shape out;
    const int64_t extra = attempt > 8 ? 0 : rng.uniform(0, 2);
    for (int64_t i = 0; i < extra; ++i) out.push_back(rng.uniform(1, 3));
    for (int64_t s : g.shape) {
      if (s == 1) out.push_back(rng.pick(std::vector<int64_t>{1, 2, 3, 4, -1, 0}));
      else out.push_back(rng.coin(0.3) ? -1 : s);
    }
    Shape real = out;
    for (size_t i = extra; i < real.size(); ++i)
      if (real[i] == -1) real[i] = g.shape[i - extra];
    if (shape_numel(real) <= max_numel || attempt > 8) return Attrs().set_ints("shape", attempt > 8 ? g.shape : out);
  }
}

Scalar pad_value(DType dt, Rng &rng) {
  if (dt == DType::Bool) return Scalar(rng.coin());
  if (!is_float(dt)) return Scalar(static_cast<long long>(rng.uniform(dt == DType::UInt8 ? 0 : -5, 7)));
  return Scalar(rng.pick(std::vector<double>{0.0, 1.5, -2.25, 7.0, -0.5}));
}

Attrs pad_attrs(const ViewGeometry &g, Rng &rng, int64_t max_numel) {
  const int64_t r = ndim_of(g);
  std::vector<int64_t> flat;
  Shape grown = g.shape;
  for (int64_t d = 0; d < r; ++d) {
    int64_t b = 0, a = 0;
    if (rng.coin(std::min(1.0, 2.0 / static_cast<double>(r)))) b = rng.uniform(0, 2), a = rng.uniform(0, 2);
    Shape trial = grown;
    trial[d] += b + a;
    if (shape_numel(trial) > max_numel) b = a = 0;
    grown[d] += b + a;
    flat.push_back(b);
    flat.push_back(a);
  }
  return Attrs().set_ints("pad", flat).set_scalar("value", pad_value(g.dtype, rng));
}

Attrs shrink_attrs(const ViewGeometry &g, Rng &rng) {
  std::vector<int64_t> flat;
  for (int64_t s : g.shape) {
    const int64_t b = rng.uniform(0, s);
    flat.push_back(b);
    flat.push_back(rng.uniform(b, s));
  }
  return Attrs().set_ints("bounds", flat);
}

Attrs flip_attrs(const ViewGeometry &g, Rng &rng) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < ndim_of(g); ++d)
    if (rng.coin()) dims.push_back(some_dim(d, ndim_of(g), rng));
  rng.shuffle(dims);
  return Attrs().set_ints("dims", dims);
}

Attrs slice_attrs(const ViewGeometry &g, Rng &rng) {
  const int64_t r = std::max<int64_t>(ndim_of(g), 1);
  const int64_t d = rng.uniform(0, r - 1);
  const int64_t n = g.shape.empty() ? 1 : g.shape[d];
  Attrs a;
  a.set_int("dim", some_dim(d, ndim_of(g), rng));
  a.set_int("step", rng.pick(std::vector<int64_t>{-3, -2, -1, 1, 1, 2, 3}));
  if (rng.coin(0.7)) a.set_int("start", rng.uniform(-n - 2, n + 2));
  if (rng.coin(0.7)) a.set_int("stop", rng.uniform(-n - 2, n + 2));
  return a;
}

Attrs as_strided_attrs(const ViewGeometry &g, Rng &rng) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    const int64_t rank = rng.uniform(0, 4);
    Shape size(rank);
    std::vector<int64_t> stride(rank);
    for (int64_t i = 0; i < rank; ++i) size[i] = rng.uniform(attempt > 25 ? 0 : 1, 4);
    for (int64_t i = 0; i < rank; ++i) stride[i] = rng.uniform(0, 4);
    int64_t extent = 0;
    for (int64_t i = 0; i < rank; ++i) extent += (size[i] - 1) * stride[i];
    const bool empty = shape_numel(size) == 0;
    if (!empty && extent >= g.storage_numel) continue;
    Attrs a;
    a.set_ints("size", size).set_ints("stride", stride);
    const bool default_fits = empty || g.offset + extent < g.storage_numel;
    if (default_fits && rng.coin(0.3)) return a;  // keep the current storage offset
    a.set_int("offset", empty ? rng.uniform(0, g.storage_numel) : rng.uniform(0, g.storage_numel - 1 - extent));
    return a;
  }
  return Attrs().set_ints("size", {0}).set_ints("stride", {1}).set_int("offset", 0);
}

Attrs transpose_attrs(const ViewGeometry &g, Rng &rng) {
  const int64_t r = std::max<int64_t>(ndim_of(g), 1);
  return Attrs()
      .set_int("dim0", some_dim(rng.uniform(0, r - 1), ndim_of(g), rng))
      .set_int("dim1", some_dim(rng.uniform(0, r - 1), ndim_of(g), rng));
}

}  // namespace

reference::Attrs movement_attrs(const std::string &op, const ViewGeometry &g, Rng &rng, int64_t max_numel) {
  if (op == "reshape") return reshape_attrs(g, rng);
  if (op == "permute") return permute_attrs(g, rng);
  if (op == "expand") return expand_attrs(g, rng, max_numel);
  if (op == "pad") return pad_attrs(g, rng, max_numel);
  if (op == "shrink") return shrink_attrs(g, rng);
  if (op == "flip") return flip_attrs(g, rng);
  if (op == "slice") return slice_attrs(g, rng);
  if (op == "as_strided") return as_strided_attrs(g, rng);
  if (op == "transpose") return transpose_attrs(g, rng);
  if (op == "contiguous") return {};
  throw std::invalid_argument("movement_attrs: unknown op " + op);
}

void random_chain(const HostTensor &base, std::vector<reference::ViewStep> &steps, DType dt, int length,
                  bool as_strided_after_copies, int64_t max_numel, Rng &rng) {
  for (int i = 0; i < length; ++i) {
    const reference::ViewInfo info = torch_view_info(base, steps);
    const ViewGeometry g{info.shape, dt, info.offset, info.storage_numel};
    std::string op = rng.pick(movement_ops());
    if (op == "as_strided" && !info.base_storage && !as_strided_after_copies) op = "permute";
    steps.push_back({op, movement_attrs(op, g, rng, max_numel / 2)});
    try {  // drop steps torch rejects (e.g. slicing a 0-d tensor) or that grow too much
      if (shape_numel(torch_view_info(base, steps).shape) > max_numel) steps.pop_back();
    } catch (const std::runtime_error &) {
      steps.pop_back();
    }
  }
}

}  // namespace loom::conformance
