// The execution layer, the only caller of the stages below it:
//   schedule -> per-kernel programs (codegen, render, compile; cached by the
//   kernel's interned AST) -> ExecItems {program, buffers, launch size} -> run.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/error.h"
#include "loom/stats.h"
#include "runtime/device.h"
#include "schedule/schedule.h"
#include "uop/uop.h"

namespace loom::engine {

// One kernel launch: a compiled program, the buffers of its DEFINE_GLOBAL
// slots and its launch size. What a JIT captures and replays.
struct ExecItem {
  std::string name;
  uop::UOpRef ast;  // the kernel's AST (the kernel cache's key)
  std::shared_ptr<const runtime::Program> program;
  shape::PoolVector<std::shared_ptr<uop::Buffer>> bufs;
  // The runtime scalars' values the program reads (codegen::KernelSpec::vars),
  // each as uop::param_bits: bound at launch, never part of the kernel.
  shape::PoolVector<uint64_t> vars;
  shape::PoolVector<uop::UOpRef> params;  // the CONSTs (uop::Param) whose values `vars` holds, in the same order
  shape::PoolVector<int64_t> shifts;  // per buffer: elements its pointer moves by (schedule/offsets.h)
  int64_t global_size = 1;  // trip count of the outermost loop
  bool parallel = false;    // split the outermost loop across cores
  int64_t work = 0;         // value ALU operations one launch executes
  // Transient buffers this launch reads for the last time (the schedule's
  // `transient`): run() places them in one allocation, which goes back to
  // the device after the last of them is read (engine/arena.h).
  shape::PoolVector<std::shared_ptr<uop::Buffer>> release;
};

// The schedule's kernels, compiled (or found in the kernel cache), as ExecItems.
std::vector<ExecItem> exec_items(const schedule::Schedule &sched);
// The same, moving each item's buffers, pointer shifts and name into its
// ExecItem rather than copying them (the items keep their ASTs and scalars).
std::vector<ExecItem> exec_items_taking(schedule::Schedule &sched);
// Runs them in order (allocating buffers on first use, releasing transient
// ones after their last use; those the items both create and release share
// one allocation, engine/arena.h); returns the work done. With `graph` (a
// JIT replay's, runtime/launch_graph.h), the generated kernels' launches go
// into it and are submitted together, the transients released after that;
// LOOM_DEBUG=2 and a trace time each launch by itself instead.
int64_t run(const std::vector<ExecItem> &items, runtime::LaunchGraph *graph = nullptr);

// Realizes the lazy outputs together (one schedule); returns each as a view
// of a realized buffer.
std::vector<uop::UOpRef> realize(const std::vector<uop::UOpRef> &outputs);

// What realize would compile, without running anything: per kernel, in
// schedule order, its name, AST, linearized program and source for the C
// target, and its CUDA source and launch (blocks of threads); `bound`, what
// its launch binds: each runtime scalar's value ("v0=0.5 float32") and each
// buffer pointer's shift ("data1+1024"), "" when none; its buffers by slot
// ("buf12[4096] float32", slot 0 the output); `library`, the extern kernel
// the device runs instead of the generated code ("openblas sgemm"), or "".
struct RenderedKernel {
  std::string name, ast, linear, c_source, cuda_source, bound;
  int64_t cuda_blocks = 1, cuda_threads = 1;
  std::vector<std::string> buffers;
  std::string library;
};
std::vector<RenderedKernel> render(const std::vector<uop::UOpRef> &outputs);

// loom::backends' switches (loom/backends.h says what each does).
bool set_extern_gemm(bool on);
bool extern_gemm();
// Sets the GEMM split's rules (its gathers, its packs' orientation) from
// the device and LOOM_EXTERN, unless set_extern_gemm has: realize and render
// call it before their first schedule, a test before it changes one.
void follow_device();
bool set_launch_graphs(bool on);
bool launch_graphs();
int64_t compile_ahead(const std::function<void()> &rehearsal);
void synchronize();  // waits for the kernels the device has queued

// The device kernels run on (LOOM_DEVICE), and why `name` ("CPU", "CUDA")
// cannot be used in this process ("" when it can).
const char *device_name();
std::string device_missing(const std::string &name);

RunStats &stats();
int debug_level();  // LOOM_DEBUG, read once
double now_ms();    // a steady clock, in milliseconds
// The disk-cache file of each kernel realizing `outputs` would run.
std::vector<std::string> cache_files(const std::vector<uop::UOpRef> &outputs);
// The process-wide kernel cache (one entry per distinct kernel AST).
size_t cached_kernels();
void clear_kernel_cache();  // later realizes reload kernels from the disk cache
// How many kernels stay loaded (default 2048; past it the least recently used
// are unloaded and reload from disk when needed). Returns the previous limit.
size_t set_kernel_cache_limit(size_t limit);
MemoryStats memory_stats();
void reset_peak_memory();

// Device memory behind a buffer: allocated on first use (contents unspecified).
void *buffer_data(uop::Buffer &buf);
// Device memory counted in memory_stats() until its last owner drops it.
std::shared_ptr<void> allocate_tracked(size_t bytes);

}  // namespace loom::engine
