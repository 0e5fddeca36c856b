// Tests: the extern GEMM switched on or off for a scope (loom/backends.h).
#pragma once
#include "loom/backends.h"

namespace loom::testing {

struct ExternGemm {
  explicit ExternGemm(bool on) : was(backends::set_extern_gemm(on)) {}
  ~ExternGemm() { backends::set_extern_gemm(was); }
  ExternGemm(const ExternGemm &) = delete;
  ExternGemm &operator=(const ExternGemm &) = delete;
  bool was;
};

}  // namespace loom::testing
