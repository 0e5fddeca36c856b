// Layouts are first-class test inputs: the same logical values reached
// through different views. Each layout is built in the engine with real
// movement ops over a contiguous base buffer (so view indexing is what gets
// tested), and in parallel as the HostTensor geometry the reference reads.
#pragma once
#include <string>
#include <vector>

#include "attrs.h"
#include "gen.h"
#include "loom/tensor.h"

namespace loom::conformance {

enum class Layout : uint8_t {
  Contiguous,    // row-major
  Permuted,      // a permutation of a contiguous base
  Strided,       // slices with step 2 or 3 (and a start) on every dim
  Negative,      // flip and step -2 slices: negative strides
  Broadcast,     // stride 0: size-1 (or missing leading) dims expanded
  Offset,        // a contiguous window starting inside a 1-d base
  Windows,       // as_strided over a 1-d base with overlapping rows
  ChannelsLast,  // dim 1 innermost (NHWC for 4-d)
};
inline constexpr Layout kAllLayouts[] = {Layout::Contiguous, Layout::Permuted, Layout::Strided,
                                         Layout::Negative,   Layout::Broadcast, Layout::Offset,
                                         Layout::Windows,    Layout::ChannelsLast};
const char *layout_name(Layout l);

struct LayoutInput {
  Layout layout = Layout::Contiguous;
  HostTensor base;                          // contiguous; owns the storage
  std::vector<reference::ViewStep> steps;   // engine movement ops: base -> view
  HostTensor view;                          // same storage, the layout's geometry
  std::string str() const;                  // layout, geometry and the steps that built it
};

// Geometry only (storage zero-filled): values come later, once the op's attrs
// (which may depend on the geometry) are known.
LayoutInput plan_layout(Layout layout, const Shape &shape, DType dtype, Rng &rng);
// Tensor::from_host(base) followed by the steps.
Tensor build_engine(const LayoutInput &in);

// The engine side of one movement step (a reference::run op name + attrs).
Tensor apply_step(const Tensor &t, const reference::ViewStep &step);

}  // namespace loom::conformance
