// torch 1.13's view and copy geometry, step by step, without torch (see
// torch_views.h). Each helper names the ATen / c10 routine it follows; the
// oracle's steps (reference/reference.cpp) are what it models, and
// view_geometry_test.cpp holds the result to libtorch.
#include "torch_views.h"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

namespace loom::conformance {
namespace {

using reference::Attrs;
using reference::ViewInfo;
using reference::ViewStep;
using Strides = std::vector<int64_t>;

[[noreturn]] void reject(const std::string &op, const std::string &why) {
  throw std::runtime_error("view chain: " + op + ": " + why);
}

int64_t ndim(const ViewInfo &v) { return static_cast<int64_t>(v.shape.size()); }

// c10::maybe_wrap_dim: a 0-d tensor wraps dims as if it had one.
int64_t wrap_dim(const std::string &op, int64_t dim, int64_t nd) {
  const int64_t n = std::max<int64_t>(nd, 1);
  if (dim < -n || dim >= n)
    reject(op, "dim " + std::to_string(dim) + " out of range for " + std::to_string(nd) + " dims");
  return dim < 0 ? dim + n : dim;
}

// at::detail::computeStorageNbytes, in elements: what empty_strided allocates
// and what as_strided must find in bounds.
int64_t storage_extent(const Shape &sizes, const Strides &strides) {
  int64_t n = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return 0;
    n += strides[d] * (sizes[d] - 1);
  }
  return n;
}

// c10::TensorImpl::compute_contiguous.
bool is_contiguous(const Shape &sizes, const Strides &strides) {
  if (shape_numel(sizes) == 0) return true;
  int64_t want = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] == 1) continue;
    if (strides[d] != want) return false;
    want *= sizes[d];
  }
  return true;
}

// TensorImpl::is_non_overlapping_and_dense: contiguous, or the dims of size >= 2
// sorted by stride tile memory exactly (the channels-last checks imply this).
bool is_dense(const Shape &sizes, const Strides &strides) {
  if (is_contiguous(sizes, strides)) return true;
  std::vector<size_t> dims;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] >= 2) dims.push_back(d);
  std::sort(dims.begin(), dims.end(), [&](size_t a, size_t b) { return strides[a] < strides[b]; });
  int64_t want = 1;
  for (size_t d : dims) {
    if (strides[d] != want) return false;
    want *= sizes[d];
  }
  return true;
}

// at::infer_dense_strides: dense strides in the input's stride order (the
// stable insertion sort TensorIterator uses; stride-0 dims compare as ties).
Strides infer_dense_strides(const Shape &sizes, const Strides &strides) {
  const size_t n = sizes.size();
  if (n <= 1) return Strides(n, 1);
  std::vector<size_t> perm(n);
  for (size_t i = 0; i < n; ++i) perm[i] = n - 1 - i;
  auto should_swap = [&](size_t d0, size_t d1) {
    if (strides[d0] == 0 || strides[d1] == 0) return 0;
    if (strides[d0] != strides[d1]) return strides[d0] < strides[d1] ? -1 : 1;
    return sizes[d0] > sizes[d1] ? 1 : 0;
  };
  for (size_t i = 1; i < n; ++i) {
    size_t dim1 = i;
    for (size_t j = 1; j <= i; ++j) {
      const size_t dim0 = i - j;
      const int c = should_swap(perm[dim0], perm[dim1]);
      if (c > 0) {
        std::swap(perm[dim0], perm[dim1]);
        dim1 = dim0;
      } else if (c < 0) {
        break;
      }
    }
  }
  Strides out(n);
  int64_t cur = 1;
  for (size_t i = 0; i < n; ++i) {
    out[perm[i]] = cur;
    if (sizes[perm[i]] > 1) cur *= sizes[perm[i]];
  }
  return out;
}

// A result in storage torch has just allocated for it.
ViewInfo fresh(const Shape &sizes, Strides strides) {
  ViewInfo v;
  v.shape = sizes;
  v.strides = std::move(strides);
  v.storage_numel = storage_extent(v.shape, v.strides);
  v.base_storage = false;
  return v;
}

// at::empty(sizes): contiguous.
ViewInfo empty_contiguous(const Shape &sizes) { return fresh(sizes, row_major_strides(sizes)); }

// at::empty_like(self, MemoryFormat::Preserve), which clone() and flip() allocate:
// self's strides where they are dense, else dense strides in self's order.
ViewInfo empty_like_preserve(const ViewInfo &v) {
  return fresh(v.shape, is_dense(v.shape, v.strides) ? v.strides : infer_dense_strides(v.shape, v.strides));
}

// c10::is_channels_last_strides_2d_s4 / _3d_s5, `order` innermost dim first.
bool strides_like_channels_last(const ViewInfo &v, std::initializer_list<size_t> order) {
  if (v.strides[1] == 0) return false;
  int64_t min = 0;
  for (size_t d : order) {
    if (v.shape[d] == 0 || v.strides[d] < min) return false;
    if (d == 0 && min == v.strides[1]) return false;
    min = v.strides[d];
    if (v.shape[d] > 1) min *= v.shape[d];
  }
  return true;
}

// at::empty(sizes, self.suggest_memory_format()): channels-last strides
// (c10::get_channels_last_strides_2d / _3d) where self's strides look
// channels-last (4-d, 5-d), else contiguous.
ViewInfo empty_suggested(const ViewInfo &self, const Shape &sizes) {
  if (ndim(self) == 4 && strides_like_channels_last(self, {1, 3, 2, 0})) {
    Strides s(4);
    s[1] = 1;
    s[3] = sizes[1];
    s[2] = s[3] * sizes[3];
    s[0] = s[2] * sizes[2];
    return fresh(sizes, s);
  }
  if (ndim(self) == 5 && strides_like_channels_last(self, {1, 4, 3, 2, 0})) {
    Strides s(5);
    s[1] = 1;
    s[4] = sizes[1];
    s[3] = s[4] * sizes[4];
    s[2] = s[3] * sizes[3];
    s[0] = s[2] * sizes[2];
    return fresh(sizes, s);
  }
  return empty_contiguous(sizes);
}

// Tensor::as_strided (setStrided, checkInBoundsForStorage): a view of v's storage.
ViewInfo strided(const ViewInfo &v, const Shape &size, const Strides &stride, int64_t offset) {
  if (size.size() != stride.size()) reject("as_strided", "mismatch in length of strides and shape");
  for (size_t d = 0; d < size.size(); ++d)
    if (stride[d] < 0 || size[d] < 0) reject("as_strided", "negative sizes and strides are not supported");
  const int64_t extent = storage_extent(size, stride);
  if (extent != 0 && offset + extent > v.storage_numel)
    reject("as_strided", "out of bounds for storage of " + std::to_string(v.storage_numel) + " elements");
  if (offset < 0) reject("as_strided", "invalid storage offset " + std::to_string(offset));
  ViewInfo out = v;
  out.shape = size;
  out.strides = stride;
  out.offset = offset;
  return out;
}

// at::infer_size: the one -1 resolved against numel.
Shape infer_size(Shape shape, int64_t numel) {
  std::optional<size_t> infer;
  int64_t known = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1) {
      if (infer) reject("reshape", "only one dimension can be inferred");
      infer = d;
    } else if (shape[d] >= 0) {
      known *= shape[d];
    } else {
      reject("reshape", "invalid shape dimension " + std::to_string(shape[d]));
    }
  }
  if (numel == known || (infer && known > 0 && numel % known == 0)) {
    if (infer) {
      if (known == 0) reject("reshape", "the unspecified dimension size -1 is ambiguous for 0 elements");
      shape[*infer] = numel / known;
    }
    return shape;
  }
  reject("reshape", "shape " + shape_str(shape) + " is invalid for input of size " + std::to_string(numel));
}

// at::detail::computeStride: strides that view (old_shape, old_stride) as
// `shape` without copying, when there are any.
std::optional<Strides> compute_stride(const Shape &old_shape, const Strides &old_stride, const Shape &shape) {
  if (old_shape.empty()) return Strides(shape.size(), 1);
  const int64_t numel = shape_numel(old_shape);
  if (numel == 0 && old_shape == shape) return old_stride;
  const int64_t last = static_cast<int64_t>(shape.size()) - 1;
  Strides out(shape.size());
  if (numel == 0) {
    for (int64_t d = last; d >= 0; --d) out[d] = d == last ? 1 : std::max<int64_t>(shape[d + 1], 1) * out[d + 1];
    return out;
  }
  int64_t view_d = last;
  int64_t chunk_base_stride = old_stride.back(), tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(old_shape.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= old_shape[tensor_d];
    // The end of a chunk of dims that merge into one strided run.
    if (tensor_d == 0 ||
        (old_shape[tensor_d - 1] != 1 && old_stride[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = old_stride[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

// Tensor::reshape: a view where computeStride finds strides, else
// _unsafe_view(clone(MemoryFormat::Contiguous)).
ViewInfo reshape(const ViewInfo &v, const Attrs &a) {
  const Shape shape = infer_size(a.get_ints("shape"), shape_numel(v.shape));
  const std::optional<Strides> st = compute_stride(v.shape, v.strides, shape);
  ViewInfo out = st ? v : empty_contiguous(v.shape);
  out.strides = st ? *st : *compute_stride(out.shape, out.strides, shape);
  out.shape = shape;
  return out;
}

ViewInfo permute(const ViewInfo &v, const Attrs &a) {
  const std::vector<int64_t> &order = a.get_ints("order");
  if (static_cast<int64_t>(order.size()) != ndim(v)) reject("permute", "number of dims don't match");
  std::vector<bool> seen(order.size());
  ViewInfo out = v;
  for (size_t i = 0; i < order.size(); ++i) {
    const int64_t d = wrap_dim("permute", order[i], ndim(v));
    if (seen[d]) reject("permute", "repeated dim");
    seen[d] = true;
    out.shape[i] = v.shape[d];
    out.strides[i] = v.strides[d];
  }
  return out;
}

// at::inferExpandGeometry (a 0-d tensor expands with all strides 0).
ViewInfo expand(const ViewInfo &v, const Attrs &a) {
  const Shape &want = a.get_ints("shape");
  const int64_t nd = static_cast<int64_t>(want.size()), td = ndim(v);
  if (nd < td) reject("expand", "fewer sizes than the tensor has dims");
  for (int64_t s : want)
    if (s < -1) reject("expand", "negative size " + std::to_string(s));
  ViewInfo out = v;
  out.shape.assign(want.size(), 0);
  out.strides.assign(want.size(), 0);
  if (td == 0) {
    if (std::count(want.begin(), want.end(), -1)) reject("expand", "-1 in a leading, non-existing dim");
    out.shape = want;
    return out;
  }
  for (int64_t i = nd - 1; i >= 0; --i) {
    const int64_t d = td - nd + i;
    int64_t size = d >= 0 ? v.shape[d] : 1;
    int64_t stride = d >= 0 ? v.strides[d] : out.shape[i + 1] * out.strides[i + 1];
    int64_t target = want[i];
    if (target == -1) {
      if (d < 0) reject("expand", "-1 in a leading, non-existing dim");
      target = size;
    }
    if (size != target) {
      if (size != 1) reject("expand", "size " + std::to_string(target) + " must match " + std::to_string(size));
      size = target;
      stride = 0;
    }
    out.shape[i] = size;
    out.strides[i] = stride;
  }
  return out;
}

// The oracle's pad: at::full for an empty input; else constant_pad_nd, which
// clones when no pad is positive and otherwise allocates
// at::empty(new_shape, self.suggest_memory_format()).
ViewInfo pad(const ViewInfo &v, const Attrs &a) {
  const std::vector<int64_t> &p = a.get_ints("pad");
  if (static_cast<int64_t>(p.size()) != 2 * ndim(v)) reject("pad", "expected one (begin, end) pair per dim");
  Shape out = v.shape;
  bool grows = false;
  for (size_t d = 0; d < out.size(); ++d) {
    if (p[2 * d] < 0 || p[2 * d + 1] < 0) reject("pad", "negative padding");
    out[d] += p[2 * d] + p[2 * d + 1];
    grows |= p[2 * d] + p[2 * d + 1] > 0;
  }
  if (shape_numel(v.shape) == 0) return empty_contiguous(out);
  if (!grows) return empty_like_preserve(v);
  return empty_suggested(v, out);
}

// Tensor::narrow per dim.
ViewInfo shrink(const ViewInfo &v, const Attrs &a) {
  const std::vector<int64_t> &b = a.get_ints("bounds");
  if (static_cast<int64_t>(b.size()) != 2 * ndim(v)) reject("shrink", "expected one (begin, end) pair per dim");
  ViewInfo out = v;
  for (size_t d = 0; d < v.shape.size(); ++d) {
    const int64_t lo = b[2 * d], hi = b[2 * d + 1];
    if (lo < 0 || lo > hi || hi > v.shape[d]) reject("shrink", "bounds out of range for dim " + std::to_string(d));
    out.offset += lo * v.strides[d];
    out.shape[d] = hi - lo;
  }
  return out;
}

// at::flip always writes a copy (empty_like, MemoryFormat::Preserve).
ViewInfo flip(const ViewInfo &v, const Attrs &a) {
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(ndim(v), 1)));
  for (int64_t d : a.get_ints("dims")) {
    const int64_t w = wrap_dim("flip", d, ndim(v));
    if (seen[w]) reject("flip", "dim " + std::to_string(w) + " appears multiple times in the list of dims");
    seen[w] = true;
  }
  return empty_like_preserve(v);
}

// The oracle's slice: Python's slice.indices, then Tensor::slice forward; a
// negative step flips (a copy) and slices the copy forward.
ViewInfo slice(const ViewInfo &v, const Attrs &a) {
  const int64_t dim = wrap_dim("slice", a.get_int("dim"), ndim(v));
  if (ndim(v) == 0) reject("slice", "a 0-d tensor has no dims");
  const int64_t n = v.shape[dim], step = a.get_int("step");
  if (step == 0) reject("slice", "step cannot be zero");
  auto norm = [&](std::optional<int64_t> x, int64_t dflt) {
    if (!x) return dflt;
    const int64_t w = *x < 0 ? *x + n : *x;
    return step > 0 ? std::clamp<int64_t>(w, 0, n) : std::clamp<int64_t>(w, -1, n - 1);
  };
  int64_t start = norm(a.opt_int("start"), step > 0 ? 0 : n - 1);
  const int64_t stop = norm(a.opt_int("stop"), step > 0 ? n : -1);
  const int64_t count =
      std::max<int64_t>(step > 0 ? (stop - start + step - 1) / step : (start - stop - step - 1) / -step, 0);
  ViewInfo out = v;
  if (count == 0) {
    out.shape[dim] = 0;
    return out;
  }
  if (step < 0) {
    out = empty_like_preserve(v);
    start = n - 1 - start;
  }
  out.offset += start * out.strides[dim];
  out.shape[dim] = count;
  out.strides[dim] *= std::abs(step);
  return out;
}

ViewInfo transpose(const ViewInfo &v, const Attrs &a) {
  const int64_t d0 = wrap_dim("transpose", a.get_int("dim0"), ndim(v));
  const int64_t d1 = wrap_dim("transpose", a.get_int("dim1"), ndim(v));
  ViewInfo out = v;
  if (d0 == d1) return out;
  std::swap(out.shape[d0], out.shape[d1]);
  std::swap(out.strides[d0], out.strides[d1]);
  return out;
}

// The oracle's to_torch: the host storage, viewed with positive strides, then
// flipped (a copy) on the dims the host view walks backwards.
ViewInfo from_host(const HostTensor &h) {
  if (h.shape.size() != h.strides.size()) throw std::invalid_argument("reference: host shape/strides rank mismatch");
  ViewInfo storage;
  storage.shape = {h.storage_numel()};
  storage.strides = {1};
  storage.storage_numel = h.storage_numel();
  const bool empty = shape_numel(h.shape) == 0;
  Strides strides = h.strides;
  int64_t offset = h.offset;
  bool flips = false;
  for (size_t d = 0; d < strides.size(); ++d) {
    if (strides[d] >= 0) continue;
    if (!empty && h.shape[d] > 1) {
      offset += (h.shape[d] - 1) * strides[d];
      flips = true;
    }
    strides[d] = -strides[d];
  }
  const ViewInfo v = strided(storage, h.shape, strides, offset);
  return flips ? empty_like_preserve(v) : v;
}

ViewInfo apply(const ViewInfo &v, const ViewStep &s) {
  const Attrs &a = s.attrs;
  if (s.op == "reshape") return reshape(v, a);
  if (s.op == "permute") return permute(v, a);
  if (s.op == "expand") return expand(v, a);
  if (s.op == "pad") return pad(v, a);
  if (s.op == "shrink") return shrink(v, a);
  if (s.op == "flip") return flip(v, a);
  if (s.op == "slice") return slice(v, a);
  if (s.op == "as_strided")
    return strided(v, a.get_ints("size"), a.get_ints("stride"), a.opt_int("offset").value_or(v.offset));
  if (s.op == "transpose") return transpose(v, a);
  if (s.op == "contiguous") return is_contiguous(v.shape, v.strides) ? v : empty_contiguous(v.shape);
  throw std::invalid_argument("torch_view_info: not a movement op: '" + s.op + "'");
}

}  // namespace

reference::ViewInfo torch_view_info(const HostTensor &base, const std::vector<reference::ViewStep> &steps) {
  ViewInfo v = from_host(base);
  for (const ViewStep &s : steps) v = apply(v, s);
  return v;
}

}  // namespace loom::conformance
