// A straight-line tensor program run in libtorch: the program fuzzer's oracle
// (fuzz/). Torch-free; reference/program.cpp is the torch interpreter. Each
// step defines one value (a leaf or an op's result) or updates a value in
// place (then every view of its storage sees the write, as in torch).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "attrs.h"

namespace loom::reference {

struct ProgramStep {
  enum class Kind : uint8_t {
    Leaf,      // value: a fresh tensor (requires_grad when asked)
    Op,        // op (a run() name) over args, with attrs; a torch view op gives a view
    Write,     // op "copy_" / "add_" (args: target, source) or "masked_fill_" (target, mask; attrs value)
    Backward,  // sum(args[0] * loss_weight(shape, dtype, weight_seed)).backward()
  };
  Kind kind = Kind::Op;
  std::string op;
  std::vector<int> args;  // indices of earlier steps
  Attrs attrs;
  HostTensor value;            // Leaf
  bool requires_grad = false;  // Leaf
  uint64_t weight_seed = 0;    // Backward
};

struct ProgramResult {
  // Per step, the value it defined as it reads once the whole program ran
  // (after every write); nullopt for writes and backward.
  std::vector<std::optional<HostTensor>> values;
  // Per step, the strides of the value it defined (empty for writes and backward).
  std::vector<std::vector<int64_t>> strides;
  // Per step, a leaf's accumulated gradient; nullopt when it has none.
  std::vector<std::optional<HostTensor>> grads;
  int error_step = -1;  // the step torch rejected (-1: none); values are then empty
  std::string error;    // torch's first line
};

ProgramResult run_program(const std::vector<ProgramStep> &steps);

// The backward step's weight: fixed pseudo-random values in [-1.25, 1.25] on a
// quarter grid, a function of the element index and the seed, so both sides
// build the same one from the shape alone.
HostTensor loss_weight(const Shape &shape, DType dtype, uint64_t seed);

}  // namespace loom::reference
