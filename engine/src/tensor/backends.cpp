// loom::backends (loom/backends.h): the front end's switches, carried out by
// the engine.
#include "loom/backends.h"

#include <string>

#include "engine/realize.h"

namespace loom::backends {

bool set_extern_gemm(bool on) { return engine::set_extern_gemm(on); }
bool extern_gemm() { return engine::extern_gemm(); }
bool set_launch_graphs(bool on) { return engine::set_launch_graphs(on); }
bool launch_graphs() { return engine::launch_graphs(); }
int64_t compile_ahead(const std::function<void()> &rehearsal) { return engine::compile_ahead(rehearsal); }
const char *device() { return std::string(engine::device_name()) == "CUDA" ? "cuda" : "cpu"; }
void synchronize() { engine::synchronize(); }

}  // namespace loom::backends
