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

namespace {

struct Lowered {
  std::vector<codegen::Program> programs;
  std::vector<RenderedKernel> kernels;
};

Lowered lower_schedule(const Schedule &sched) {
  Lowered out;
  for (auto &item : sched.items) {
    std::vector<DType> dts;
    for (auto &b : item.bufs) dts.push_back(b->dtype);
    out.programs.push_back(codegen::linearize(codegen::lower(item.ast), item.name, dts));
    out.kernels.push_back({item.name, item.ast->str(), codegen::program_str(out.programs.back()),
                           renderer::render_c(out.programs.back())});
  }
  return out;
}

}  // namespace

std::vector<RenderedKernel> render(const std::vector<uop::UOpRef> &outputs) {
  return lower_schedule(create_schedule(outputs)).kernels;
}

std::vector<uop::UOpRef> realize(const std::vector<uop::UOpRef> &outputs) {
  double t0 = now_ms();
  Schedule sched = create_schedule(outputs);
  if (sched.items.empty()) {
    commit(sched);
    return sched.results;
  }

  Lowered lowered = lower_schedule(sched);
  auto &programs = lowered.programs;
  std::string source = renderer::c_prelude();
  std::vector<std::string> names;
  for (auto &k : lowered.kernels) {
    if (debug_level() >= 4) std::cerr << "--- AST " << k.name << "\n" << k.ast << "--- linear\n" << k.linear;
    if (debug_level() >= 3) std::cerr << k.c_source;
    source += k.c_source;
    names.push_back(k.name);
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
  commit(sched);
  if (debug_level() >= 1)
    std::fprintf(stderr, "realize: %zu kernel%s in %.3f ms\n", sched.items.size(), sched.items.size() == 1 ? "" : "s",
                 now_ms() - t0);
  return sched.results;
}

}  // namespace loom::schedule
