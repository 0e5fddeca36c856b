// The C renderer: a linearized Program becomes one C function
//   void <name>(void **bufs, int64_t start, int64_t end)
// where [start, end) is the slice of the outermost loop this call runs.
#pragma once
#include <string>

#include "codegen/linearize.h"

namespace loom::renderer {

std::string render_c(const codegen::Program &p);
// Shared helpers (half conversions, NaN-propagating max/min, integer pow).
const std::string &c_prelude();

}  // namespace loom::renderer
