// ShapeTracker: a stack of views. views.back() maps the logical shape to a
// flat index of views[size-2]'s shape, and so on down to views.front(),
// whose flat index addresses the underlying buffer (or computed tensor).
#pragma once
#include <string>
#include <vector>

#include "shape/view.h"
#include "shape/view_stack.h"

namespace loom::shape {

struct ShapeTracker {
  ViewStack views;

  static ShapeTracker from_shape(const Shape &shape);
  const Shape &shape() const { return views.back().shape; }
  int64_t numel() const { return views.back().numel(); }
  // One unmasked view: torch could express it as (sizes, strides, offset).
  bool single_plain() const { return views.size() == 1 && !views[0].mask; }
  bool contiguous() const { return views.size() == 1 && views[0].contiguous(); }

  ShapeTracker permute(const std::vector<int64_t> &order) const;
  ShapeTracker expand(const Shape &new_shape) const;
  ShapeTracker pad(const Mask &pads) const;
  ShapeTracker shrink(const Mask &bounds) const;
  ShapeTracker flip(const std::vector<bool> &dims) const;
  ShapeTracker step(const std::vector<int64_t> &steps) const;
  ShapeTracker reshape(const Shape &new_shape) const;
  // This tracker applied on top of `inner` (inner's shape == views.front()'s flat space).
  ShapeTracker compose_onto(const ShapeTracker &inner) const;

  bool operator==(const ShapeTracker &o) const = default;
  size_t hash() const;
  std::string str() const;

 private:
  ShapeTracker with_top(View v) const;
};

}  // namespace loom::shape
