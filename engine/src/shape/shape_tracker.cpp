#include "shape/shape_tracker.h"

#include <array>
#include <sstream>

namespace loom::shape {

// The row-major trackers of the shapes this thread asked for last: a graph
// asks for the same few shapes over and over (each new tensor's, each node's
// tracker), and a copy of a kept one is a reference count where a new one is
// four allocations (its views, their array, a shape and a stride list).
// Copies share the views until one changes (ViewStack copies on write).
ShapeTracker ShapeTracker::from_shape(const Shape &shape) {
  constexpr size_t kKept = 16;
  thread_local std::array<ShapeTracker, kKept> kept;
  thread_local size_t next = 0;
  for (const ShapeTracker &t : kept)
    if (!t.views.empty() && t.shape() == shape) return t;
  ShapeTracker &slot = kept[next];
  next = (next + 1) % kKept;
  slot = ShapeTracker{ViewStack(View::create(shape))};
  return slot;
}

ShapeTracker ShapeTracker::with_top(View v) const {
  if (views.size() == 1) return ShapeTracker{ViewStack(std::move(v))};
  ShapeTracker st = *this;
  st.views.back() = std::move(v);
  return st;
}

ShapeTracker ShapeTracker::permute(const std::vector<int64_t> &order) const { return with_top(views.back().permute(order)); }
ShapeTracker ShapeTracker::expand(const Shape &s) const { return with_top(views.back().expand(s)); }
ShapeTracker ShapeTracker::pad(const Mask &p) const { return with_top(views.back().pad(p)); }
ShapeTracker ShapeTracker::shrink(const Mask &b) const { return with_top(views.back().shrink(b)); }
ShapeTracker ShapeTracker::flip(const std::vector<bool> &d) const { return with_top(views.back().flip(d)); }
ShapeTracker ShapeTracker::step(const std::vector<int64_t> &s) const { return with_top(views.back().step(s)); }

ShapeTracker ShapeTracker::reshape(const Shape &new_shape) const {
  if (auto v = views.back().reshape(new_shape)) return with_top(std::move(*v));
  ShapeTracker st = *this;
  st.views.push_back(View::create(new_shape));
  return st;
}

ShapeTracker ShapeTracker::compose_onto(const ShapeTracker &inner) const {
  // Over a row-major inner view, flat indices address the base directly.
  if (inner.contiguous()) return *this;
  ShapeTracker st = inner;
  for (size_t i = 0; i < views.size(); i++) {
    // A contiguous bottom view over a same-sized space is the identity.
    if (i == 0 && views[0].contiguous() && views[0].numel() == st.numel()) {
      st = st.reshape(views[0].shape);
      continue;
    }
    st.views.push_back(views[i]);
  }
  return st;
}

size_t ShapeTracker::hash() const {
  size_t h = 0xcbf29ce484222325ull;
  for (auto &v : views) h = (h ^ v.hash()) * 0x100000001b3ull;
  return h;
}

std::string ShapeTracker::str() const {
  std::ostringstream os;
  os << "ShapeTracker(";
  for (size_t i = 0; i < views.size(); i++) {
    auto &v = views[i];
    os << (i ? ", " : "") << "View(shape=" << shape_str(v.shape) << ", strides=" << shape_str(v.strides)
       << ", offset=" << v.offset;
    if (v.mask) {
      os << ", mask=(";
      for (size_t d = 0; d < v.mask->size(); d++)
        os << (d ? ", " : "") << "(" << (*v.mask)[d].first << ", " << (*v.mask)[d].second << ")";
      os << ")";
    }
    os << ")";
  }
  os << ")";
  return os.str();
}

}  // namespace loom::shape
