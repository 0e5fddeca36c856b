// View: how a logical shape maps onto a flat index range.
// index(i) = offset + sum(i[d] * strides[d]), valid only where every
// mask[d].first <= i[d] < mask[d].second (invalid elements read as 0).
#pragma once
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "loom/host.h"

namespace loom::shape {

using Strides = std::vector<int64_t>;
using Mask = std::vector<std::pair<int64_t, int64_t>>;

int64_t prod(const Shape &s);
Strides contiguous_strides(const Shape &s);  // row-major, as torch computes them

struct View {
  Shape shape;
  Strides strides;
  int64_t offset = 0;
  std::optional<Mask> mask;  // nullopt = every element valid

  // Strides are kept as torch would report them (size-1 dims included: torch's
  // memory-format heuristics read them); a full mask is dropped; a fully masked
  // view has zero strides and offset.
  // Takes its lists by value: a caller that built them moves them in.
  static View create(Shape shape, std::optional<Strides> strides = std::nullopt, int64_t offset = 0,
                     std::optional<Mask> mask = std::nullopt);

  int64_t numel() const { return prod(shape); }
  // Row-major, offset 0, no mask: the flat index is the logical index.
  bool contiguous() const;
  // Smallest and largest flat index over the valid elements (numel > 0 and not fully masked).
  std::pair<int64_t, int64_t> index_bounds() const;
  bool empty() const;  // no valid elements

  View permute(const std::vector<int64_t> &order) const;
  View expand(const Shape &new_shape) const;  // size-1 dims only
  View pad(const Mask &pads) const;           // (before, after) per dim
  View shrink(const Mask &bounds) const;      // (begin, end) per dim
  View flip(const std::vector<bool> &dims) const;
  View step(const std::vector<int64_t> &steps) const;  // positive steps: keep every k-th element
  // A single view with the new shape, when one exists.
  std::optional<View> reshape(const Shape &new_shape) const;

  bool operator==(const View &o) const = default;
  size_t hash() const;
};

}  // namespace loom::shape
