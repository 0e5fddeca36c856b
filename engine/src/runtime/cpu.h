// CPU runtime: C source -> shared object (cached on disk by source hash) ->
// dlopen'ed kernel functions, launched over a thread pool.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace loom::runtime {

using KernelFn = void (*)(void **bufs, int64_t start, int64_t end);

struct CompileResult {
  std::vector<KernelFn> fns;  // one per requested name
  bool compiled = false;      // false when the disk or process cache had it
};

// Compiles one translation unit and looks up `names` in it.
CompileResult compile_c(const std::string &source, const std::vector<std::string> &names);

// Runs fn over [0, global_size) of its outermost loop, split across cores when `parallel`.
void launch(KernelFn fn, void **bufs, int64_t global_size, bool parallel);

}  // namespace loom::runtime
