// torch's geometry after a chain of movement steps, computed without torch:
// the view's shape, strides and offset, and which storage it addresses — the
// base's, or the one torch allocates where it copies (flip, pad, a reshape
// that cannot be a view, a negative-step slice, contiguous), with the strides
// torch 1.13 gives that copy. The generators read it to keep as_strided in
// bounds, so the op table and replay need no libtorch; it must equal
// reference::view_chain_info exactly (ViewChainGeometry.* checks that).
#pragma once
#include <vector>

#include "attrs.h"

namespace loom::conformance {

// As reference::view_chain_info: torch's view of `base` (negative strides
// rebuilt with a flip, as the oracle does) after `steps`. Throws
// std::runtime_error where torch rejects a step.
reference::ViewInfo torch_view_info(const HostTensor &base, const std::vector<reference::ViewStep> &steps);

}  // namespace loom::conformance
