// The viewer's recorder (loom/viz.h): realize, the kernel cache and run
// report to it while it records; nothing here changes what they do.
#pragma once
#include <string>

#include "codegen/pipeline.h"
#include "engine/realize.h"
#include "schedule/schedule.h"

namespace loom::engine::trace {

bool on();  // recording (LOOM_VIZ or loom::viz::start)

// A kernel's codegen, the first time this process lowers its AST.
void kernel_lowered(const uop::UOpRef &ast, const std::string &name, codegen::PassLog passes, const char *library);
void kernel_source(const uop::UOpRef &ast, const std::string &source);
void compiled(double start_ms, double ms, int64_t compiled, int64_t kernels);

// Around one realize: its launches are attributed to it.
void realize_begun(double start_ms);
void realize_ended(const schedule::Schedule &sched, double end_ms, int64_t work, int64_t compiled);
void launched(const ExecItem &e, double start_ms, double ms, int64_t live_bytes);

// Lowers with the codegen pass log on this thread while recording.
class PassCapture {
 public:
  PassCapture();
  ~PassCapture();
  codegen::PassLog take();

 private:
  codegen::PassLog log_;
  bool on_;
};

}  // namespace loom::engine::trace
