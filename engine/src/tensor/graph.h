// The Tensor ops' view of the UOp graph helpers (uop/graph.h), plus the
// error-text helpers every op uses.
#pragma once
#include "uop/graph.h"

namespace loom::tensor {

using uop::Op;
using uop::UOp;
using uop::UOpRef;
using uop::base_of;
using uop::buffer_view;
using uop::const_tensor;
using uop::const_int_tensor;
using uop::copy_point;
using uop::root_of;
using uop::shape_of;
using uop::tracker_of;
using uop::view;

// Error text helpers: "(2, 3) float32".
std::string describe(const UOpRef &u);
// Wraps a possibly negative dim; throws IndexError like torch.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char *op);

}  // namespace loom::tensor
