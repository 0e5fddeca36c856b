// Random attributes for movement ops, shared by the op table entries and the
// view-algebra chain property. Always valid for the given geometry (errors
// have their own tests), so a mismatch is a semantic one.
#pragma once
#include <string>
#include <vector>

#include "attrs.h"
#include "gen.h"

namespace loom::conformance {

// What a movement step may look at: the current view and torch's storage under it.
struct ViewGeometry {
  Shape shape;
  DType dtype = DType::Float32;
  int64_t offset = 0;         // storage offset of the current view
  int64_t storage_numel = 0;  // elements as_strided may address
};

inline const std::vector<std::string> &movement_ops() {
  static const std::vector<std::string> ops = {"reshape", "permute", "expand", "pad",      "shrink",
                                               "flip",    "slice",   "as_strided", "transpose"};
  return ops;
}

// Attrs for `op` (one of movement_ops(), or "contiguous") valid on g. Results
// stay under ~`max_numel` elements where the op can grow them (expand, pad).
reference::Attrs movement_attrs(const std::string &op, const ViewGeometry &g, Rng &rng, int64_t max_numel = 256);

// Appends `length` random movement steps to `steps` (which build a view of
// `base`), keeping results under max_numel elements and dropping steps torch
// rejects. as_strided only appears while torch still views the base's storage,
// unless `as_strided_after_copies` (it then addresses the copy torch made).
void random_chain(const HostTensor &base, std::vector<reference::ViewStep> &steps, DType dt, int length,
                  bool as_strided_after_copies, int64_t max_numel, Rng &rng);

}  // namespace loom::conformance
