// What every call of a JIT must keep as its first call had it (how many
// tensors, scalars and baked values; the baked values) and, once captured, as
// the capture read it (each input's view, dtype, storage size and sharing).
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "shape/shape_tracker.h"
#include "uop/buffer.h"

namespace loom::jit {

struct CallSignature {
  size_t tensors = 0, scalars = 0;
  std::vector<double> baked;
  // Throws loom::Error naming `who` where a call differs from the first.
  void check(size_t n_tensors, size_t n_scalars, const std::vector<double> &baked_now, const std::string &who) const;
};

// An input as the capture read it: a view of its buffer.
struct InputLayout {
  shape::ShapeTracker st;
  DType dtype = DType::Float32;
  int64_t buffer_size = 0;
  int same_as = -1;  // an earlier input on the same buffer
  int slot = -1;     // in the replay graph; -1: the capture does not read it
};

// Each input's buffer and view (one per input, in order).
struct InputViews {
  std::vector<std::shared_ptr<uop::Buffer>> buffers;
  std::vector<shape::ShapeTracker> views;
};
std::vector<InputLayout> input_layouts(const InputViews &in);

// Binds each input's buffer to its slot in `bound`. Throws loom::Error naming
// `who` where an input's layout or its sharing of storage with an earlier
// input differs from the capture's; `describe(i)` names input i's layout.
void bind_inputs(const std::vector<InputLayout> &layouts, const InputViews &in,
                 const std::function<std::string(size_t)> &describe, std::vector<std::shared_ptr<uop::Buffer>> &bound,
                 const std::string &who);

}  // namespace loom::jit
