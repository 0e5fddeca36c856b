// The replay corpus: fixed programs whose kernels are snapshotted. One
// program per op-table entry and layout, plus fusion, movement, dtype and
// gradient showcases.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "loom/tensor.h"

namespace loom::replay {

struct Program {
  std::string name;                             // also the snapshot file name (+ ".txt")
  std::string op;                               // the op-table entry it covers ("" for showcases)
  std::function<std::vector<Tensor>()> build;  // lazy outputs; nothing is realized
};

const std::vector<Program> &corpus();

}  // namespace loom::replay
