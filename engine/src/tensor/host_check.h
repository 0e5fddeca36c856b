// Checks of a tensor's values on the host (indices in range, integer
// divisors nonzero, class targets valid): torch's kernels raise on such values
// as they run, loom reads them after realizing the tensor. Under a JIT capture
// the check is recorded and runs again on every replay with that call's values.
#pragma once
#include <functional>

#include "loom/host.h"
#include "loom/tensor.h"

namespace loom::tensor {

// Runs `check` on the realized row-major values of `t` (throwing, if it
// throws). `check` is kept by a capture: it must own what it reads.
void check_on_host(const Tensor &t, std::function<void(const HostTensor &)> check);

}  // namespace loom::tensor
