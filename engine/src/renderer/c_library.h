// Library kernels of the C target: fixed algorithms rendered from templates
// (a stable merge sort per line for SORT), launched like generated kernels.
#pragma once
#include <string>

#include "codegen/linearize.h"

namespace loom::renderer {

std::string render_c_library(const codegen::Program &p);

}  // namespace loom::renderer
