// realize: schedule -> codegen -> render -> compile -> run, for a set of lazy
// outputs; returns each output as a view of a realized buffer.
#pragma once
#include <vector>

#include "loom/tensor.h"
#include "uop/uop.h"

namespace loom::schedule {

std::vector<uop::UOpRef> realize(const std::vector<uop::UOpRef> &outputs);
RunStats &stats();

}  // namespace loom::schedule
