#include "shape/view.h"

#include <algorithm>
#include <string>

#include "loom/error.h"

namespace loom::shape {

int64_t prod(const Shape &s) { return shape_numel(s); }

Strides contiguous_strides(const Shape &s) { return row_major_strides(s); }

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

View View::create(Shape shape_in, std::optional<Strides> strides, int64_t offset, std::optional<Mask> mask) {
  View v;
  v.shape = std::move(shape_in);
  const Shape &shape = v.shape;
  v.strides = strides ? std::move(*strides) : contiguous_strides(shape);
  LOOM_CHECK(v.strides.size() == shape.size(), "view rank mismatch");
  v.offset = offset;
  if (mask) {
    LOOM_CHECK(mask->size() == shape.size(), "mask rank mismatch");
    bool full = true, empty = false;
    for (size_t d = 0; d < shape.size(); d++) {
      auto [b, e] = (*mask)[d];
      if (b != 0 || e != shape[d]) full = false;
      if (b >= e) empty = true;
    }
    if (empty) {
      v.mask = Mask(shape.size(), {0, 0});
    } else if (!full) {
      v.mask = std::move(mask);
      // A dim masked to a single element contributes a constant: fold it into the offset.
      for (size_t d = 0; d < shape.size(); d++) {
        auto &[b, e] = (*v.mask)[d];
        if (e - b == 1 && v.strides[d] != 0) {
          v.offset += b * v.strides[d];
          v.strides[d] = 0;
        }
      }
    }
  }
  // A size-0 view keeps its strides and offset (torch reports them, and
  // as_strided starts from that offset); a fully masked one reads nothing.
  if (prod(shape) == 0) {
    v.mask.reset();
  } else if (v.mask && std::any_of(v.mask->begin(), v.mask->end(), [](auto p) { return p.first >= p.second; })) {
    std::fill(v.strides.begin(), v.strides.end(), 0);
    v.offset = 0;
  }
  return v;
}

// Size-1 dims keep whatever stride torch would report; they never move the index.
bool View::contiguous() const {
  if (offset != 0 || mask) return false;
  // Row-major strides from the innermost dim out, as contiguous_strides computes them.
  uint64_t want = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1 && strides[d] != static_cast<int64_t>(want)) return false;
    want *= static_cast<uint64_t>(std::max<int64_t>(shape[d], 1));
  }
  return true;
}

bool View::empty() const {
  if (numel() == 0) return true;
  return mask && std::any_of(mask->begin(), mask->end(), [](auto p) { return p.first >= p.second; });
}

std::pair<int64_t, int64_t> View::index_bounds() const {
  int64_t lo = offset, hi = offset;
  for (size_t d = 0; d < shape.size(); d++) {
    int64_t b = mask ? (*mask)[d].first : 0, e = mask ? (*mask)[d].second : shape[d];
    int64_t a = b * strides[d], z = (e - 1) * strides[d];
    lo += std::min(a, z);
    hi += std::max(a, z);
  }
  return {lo, hi};
}

View View::permute(const std::vector<int64_t> &order) const {
  Shape s;
  Strides st;
  std::optional<Mask> m;
  s.reserve(order.size());
  st.reserve(order.size());
  if (mask) m.emplace().reserve(order.size());
  for (auto o : order) {
    s.push_back(shape[o]);
    st.push_back(strides[o]);
    if (mask) m->push_back((*mask)[o]);
  }
  return create(std::move(s), std::move(st), offset, std::move(m));
}

View View::expand(const Shape &new_shape) const {
  Strides st = strides;
  std::optional<Mask> m = mask;
  for (size_t d = 0; d < shape.size(); d++) {
    if (shape[d] == new_shape[d]) continue;
    LOOM_CHECK(shape[d] == 1, "expand of a non-1 dim");
    st[d] = 0;
    if (m) (*m)[d] = (*m)[d].first < (*m)[d].second ? std::pair<int64_t, int64_t>{0, new_shape[d]}
                                                    : std::pair<int64_t, int64_t>{0, 0};
  }
  return create(new_shape, std::move(st), offset, std::move(m));
}

View View::pad(const Mask &pads) const {
  Shape s = shape;
  Mask m(shape.size());
  int64_t off = offset;
  for (size_t d = 0; d < shape.size(); d++) {
    auto [lo, hi] = pads[d];
    s[d] = shape[d] + lo + hi;
    auto [b, e] = mask ? (*mask)[d] : std::pair<int64_t, int64_t>{0, shape[d]};
    m[d] = {b + lo, e + lo};
    // A view without elements stays fully masked (create() zeroes its
    // strides and offset): its strides, however large, move nothing.
    int64_t shift = 0;
    if (numel() != 0 && (__builtin_mul_overflow(lo, strides[d], &shift) || __builtin_sub_overflow(off, shift, &off)))
      throw Error("pad: padding " + std::to_string(lo) + " before dim " + std::to_string(d) +
                  " moves the view's offset past the int64 range");
  }
  return create(std::move(s), strides, off, std::move(m));
}

View View::shrink(const Mask &bounds) const {
  Shape s(shape.size());
  int64_t off = offset;
  std::optional<Mask> m;
  if (mask) m.emplace(shape.size());
  bool overflow = false;
  for (size_t d = 0; d < shape.size(); d++) {
    auto [b, e] = bounds[d];
    s[d] = e - b;
    int64_t shift = 0;
    overflow |= __builtin_mul_overflow(b, strides[d], &shift) || __builtin_add_overflow(off, shift, &off);
    if (mask) {
      auto [mb, me] = (*mask)[d];
      int64_t nb = std::clamp<int64_t>(mb - b, 0, s[d]), ne = std::clamp<int64_t>(me - b, 0, s[d]);
      (*m)[d] = {nb, std::max(nb, ne)};
    }
  }
  // A view without elements (create() zeroes its offset) may have strides
  // past any buffer: a reshape of an empty tensor to huge dims.
  if (overflow && std::find(s.begin(), s.end(), 0) == s.end())
    throw Error("shrink: the view's offset passes the int64 range");
  return create(std::move(s), strides, overflow ? 0 : off, std::move(m));
}

View View::flip(const std::vector<bool> &dims) const {
  Strides st = strides;
  int64_t off = offset;
  std::optional<Mask> m = mask;
  for (size_t d = 0; d < shape.size(); d++) {
    if (!dims[d] || shape[d] <= 1) continue;
    off += (shape[d] - 1) * strides[d];
    st[d] = -strides[d];
    if (m) (*m)[d] = {shape[d] - (*m)[d].second, shape[d] - (*m)[d].first};
  }
  return create(shape, std::move(st), off, std::move(m));
}

View View::step(const std::vector<int64_t> &steps) const {
  Shape s = shape;
  Strides st = strides;
  std::optional<Mask> m = mask;
  for (size_t d = 0; d < shape.size(); d++) {
    int64_t k = steps[d];
    LOOM_CHECK(k > 0, "step must be positive");
    s[d] = ceil_div(shape[d], k);
    st[d] = strides[d] * k;
    if (m) (*m)[d] = {ceil_div((*m)[d].first, k), std::max(ceil_div((*m)[d].first, k), ceil_div((*m)[d].second, k))};
  }
  return create(std::move(s), std::move(st), offset, std::move(m));
}

namespace {
// Strides for viewing (shape, strides) as new_shape without a copy, when possible.
// Works group by group: a run of old dims that is contiguous in memory can be
// split into any new dims of the same total size.
std::optional<Strides> reshape_strides(const Shape &shape, const Strides &strides, const Shape &new_shape) {
  Strides out(new_shape.size(), 0);
  if (prod(shape) == 0) return contiguous_strides(new_shape);
  if (shape.empty()) return out;  // a scalar viewed as (1, 1, ...)
  int64_t view_d = static_cast<int64_t>(new_shape.size()) - 1;
  int64_t chunk_base = strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t td = static_cast<int64_t>(shape.size()) - 1; td >= 0; td--) {
    tensor_numel *= shape[td];
    bool chunk_ends = td == 0 || (shape[td - 1] != 1 && strides[td - 1] != tensor_numel * chunk_base);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
      out[view_d] = view_numel * chunk_base;
      view_numel *= new_shape[view_d];
      view_d--;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (td > 0) {
      chunk_base = strides[td - 1];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

Shape non_one(const Shape &s) {
  Shape r;
  for (auto d : s)
    if (d != 1) r.push_back(d);
  return r;
}
}  // namespace

std::optional<View> View::reshape(const Shape &new_shape) const {
  if (new_shape == shape) return *this;
  if (prod(new_shape) == 0) return create(new_shape, std::nullopt, offset);
  if (!mask) {
    auto st = reshape_strides(shape, strides, new_shape);
    if (!st) return std::nullopt;
    return create(new_shape, std::move(st), offset);
  }
  // Masked: only inserting or removing size-1 dims keeps one view.
  if (non_one(shape) != non_one(new_shape)) return std::nullopt;
  // All masked out. A 0-d view has no dim to mask, so it needs a view stack.
  const auto masked_out = [&]() -> std::optional<View> {
    if (new_shape.empty()) return std::nullopt;
    return create(new_shape, std::nullopt, 0, Mask(new_shape.size(), {0, 0}));
  };
  Strides st;
  Mask m;
  st.reserve(new_shape.size());
  m.reserve(new_shape.size());
  size_t od = 0;
  int64_t off = offset;
  for (auto nd : new_shape) {
    if (nd == 1) {
      st.push_back(0);
      m.push_back({0, 1});
      continue;
    }
    while (shape[od] == 1) {  // dropped size-1 dim: if it is masked out, the whole view is empty
      if ((*mask)[od].first >= (*mask)[od].second) return masked_out();
      od++;
    }
    st.push_back(strides[od]);
    m.push_back((*mask)[od]);
    od++;
  }
  for (; od < shape.size(); od++)
    if ((*mask)[od].first >= (*mask)[od].second) return masked_out();
  return create(new_shape, std::move(st), off, std::move(m));
}

size_t View::hash() const {
  size_t h = std::hash<int64_t>()(offset) ^ 0x9e3779b97f4a7c15ull;
  auto mix = [&h](int64_t v) { h = (h ^ std::hash<int64_t>()(v)) * 0x100000001b3ull; };
  for (auto d : shape) mix(d);
  for (auto d : strides) mix(d);
  mix(mask ? 1 : 0);
  if (mask)
    for (auto [b, e] : *mask) {
      mix(b);
      mix(e);
    }
  return h;
}

}  // namespace loom::shape
