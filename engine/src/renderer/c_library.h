// Library kernels of the C target: fixed algorithms rendered from templates
// (a stable merge sort per line for SORT, the float32 GEMM of c_gemm.h),
// launched like generated kernels.
#pragma once
#include <string>

#include "codegen/linearize.h"

namespace loom::renderer {

std::string render_c_library(const codegen::KernelSpec &p);

// A sort kernel's lines (KernelSpec::library is the SORT node): the sorted
// dtype, the line length n, the stride `inner` between a line's elements,
// and the order.
struct SortLines {
  DType dtype;
  int64_t n, inner;
  bool descending;
};
SortLines sort_lines(const codegen::KernelSpec &p);

// Shared by the targets' sort templates: an element's type in memory, an
// element read as a key (halves as float, integers and bool as int64), and
// the comparison of keys x before y (NaN largest), a macro body.
const char *sort_mem_type(DType d);
std::string sort_key(DType d, const std::string &element);
std::string sort_before(DType d, bool descending);

}  // namespace loom::renderer
