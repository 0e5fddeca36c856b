#include "schedule/realize.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "codegen/linearize.h"
#include "codegen/lowerer.h"
#include "renderer/c_renderer.h"
#include "runtime/cpu.h"
#include "schedule/schedule.h"

namespace loom::schedule {

namespace {

int debug_level() {
  static const int level = [] {
    const char *e = std::getenv("LOOM_DEBUG");
    return e ? std::atoi(e) : 0;
  }();
  return level;
}

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace

RunStats &stats() {
  static RunStats s;
  return s;
}

std::vector<uop::UOpRef> realize(const std::vector<uop::UOpRef> &outputs) {
  double t0 = now_ms();
  Schedule sched = create_schedule(outputs);
  if (sched.items.empty()) return sched.results;

  std::vector<codegen::Program> programs;
  std::string source = renderer::c_prelude();
  std::vector<std::string> names;
  for (auto &item : sched.items) {
    std::vector<DType> dts;
    for (auto &b : item.bufs) dts.push_back(b->dtype);
    auto lowered = codegen::lower(item.ast);
    programs.push_back(codegen::linearize(lowered, item.name, dts));
    std::string src = renderer::render_c(programs.back());
    if (debug_level() >= 4) std::cerr << "--- AST " << item.name << "\n" << item.ast->str() << "--- linear\n"
                                      << codegen::program_str(programs.back());
    if (debug_level() >= 3) std::cerr << src;
    source += src;
    names.push_back(item.name);
  }
  auto compiled = runtime::compile_c(source, names);
  if (compiled.compiled) stats().kernels_compiled += static_cast<int64_t>(names.size());

  for (size_t i = 0; i < sched.items.size(); i++) {
    auto &item = sched.items[i];
    auto &prog = programs[i];
    std::vector<void *> ptrs;
    int64_t bytes = 0;
    for (auto &b : item.bufs) {
      if (!b->allocated()) {
        b->allocate();
        stats().buffers_allocated++;
      }
      ptrs.push_back(b->data());
      bytes += b->size * static_cast<int64_t>(itemsize(b->dtype));
    }
    int64_t global = prog.global_range ? static_cast<int64_t>(prog.global_range->src[0]->const_value()) : 1;
    bool parallel = prog.iterations * std::max<int64_t>(1, prog.alu_ops) >= (1 << 16);
    double k0 = now_ms();
    runtime::launch(compiled.fns[i], ptrs.data(), global, parallel);
    double ms = now_ms() - k0;
    stats().kernels_run++;
    if (debug_level() >= 2) {
      double flops = static_cast<double>(prog.iterations) * static_cast<double>(prog.alu_ops);
      std::fprintf(stderr, "  kernel %-28s global=%-8lld %9.3f ms %8.3f GFLOP/s %8.3f GB/s\n", item.name.c_str(),
                   static_cast<long long>(global), ms, flops / (ms * 1e6 + 1e-12), bytes / (ms * 1e6 + 1e-12));
    }
  }
  if (debug_level() >= 1)
    std::fprintf(stderr, "realize: %zu kernel%s in %.3f ms\n", sched.items.size(), sched.items.size() == 1 ? "" : "s",
                 now_ms() - t0);
  return sched.results;
}

}  // namespace loom::schedule
