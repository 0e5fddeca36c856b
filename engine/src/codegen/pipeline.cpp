#include "codegen/pipeline.h"

#include <cstdlib>
#include <iostream>

namespace loom::codegen {

namespace {

bool dump_passes() {
  static const bool on = [] {
    const char *e = std::getenv("LOOM_DEBUG");
    return e && std::atoi(e) >= 4;
  }();
  return on;
}

void log_pass(const std::string &kernel, const char *pass, const std::string &text) {
  if (dump_passes()) std::cerr << "--- " << kernel << " after " << pass << "\n" << text;
}

}  // namespace

Program compile_kernel(const UOpRef &ast, const std::string &name, std::vector<DType> buf_dtypes) {
  log_pass(name, "schedule (AST)", ast->str());
  LoweredKernel lowered = lower(ast);
  log_pass(name, "lower", lowered.sink->str());
  Program p = linearize(lowered, name, std::move(buf_dtypes));
  log_pass(name, "linearize", program_str(p));
  return p;
}

}  // namespace loom::codegen
