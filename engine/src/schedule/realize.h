// realize: schedule -> codegen -> render -> compile -> run, for a set of lazy
// outputs; returns each output as a view of a realized buffer.
#pragma once
#include <vector>

#include "loom/tensor.h"
#include "uop/uop.h"

namespace loom::schedule {

std::vector<uop::UOpRef> realize(const std::vector<uop::UOpRef> &outputs);

// What realize would compile, without running anything: per kernel, in
// schedule order, its name, AST, linearized program and C source.
struct RenderedKernel {
  std::string name, ast, linear, c_source;
};
std::vector<RenderedKernel> render(const std::vector<uop::UOpRef> &outputs);
RunStats &stats();

}  // namespace loom::schedule
