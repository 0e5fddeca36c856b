// The loom side of a program step (shared by the generator, which runs steps
// lazily for their shapes, and check()).
#pragma once
#include <vector>

#include "fuzz_program.h"
#include "loom/tensor.h"

namespace loom::fuzz {

HostTensor leaf_values(const Step &leaf);  // drawn from the leaf's seed and domain
Tensor leaf_tensor(const Step &leaf);      // from_host(leaf_values), requires_grad when asked
Tensor run_op(const Step &op, const std::vector<Tensor> &inputs);  // the op-table entry's engine call
// copy_: target.assign(other); add_: target.assign(target + other);
// masked_fill_: target.assign(target.masked_fill(other, value)).
void run_write(const Step &write, Tensor &target, const Tensor &other);

}  // namespace loom::fuzz
