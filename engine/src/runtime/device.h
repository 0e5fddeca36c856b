// The Device interface: what the engine needs from a backend. A device
// allocates buffers, compiles kernel sources into programs (each cached on
// disk by its source and the compiler's identity) and launches them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/linearize.h"
#include "codegen/pipeline.h"
#include "runtime/launch_graph.h"
#include "schedule/gemm_shape.h"

namespace loom::runtime {

// One compiled kernel, ready to launch. `global_size` is the trip count of the
// kernel's outermost loop, which a device may split across its cores.
class Program {
 public:
  virtual ~Program() = default;
  // bufs: the kernel's buffers, then a pointer to each runtime scalar's value
  // (KernelSource::buffers and vars).
  virtual void launch(void **bufs, int64_t global_size, bool parallel) const = 0;
  // The library routine an extern program calls; nullptr for generated code.
  virtual const char *library() const { return nullptr; }
  // An extern program's call as LOOM_DEBUG=2 prints it (its plan and the
  // alignment of the buffers `bufs` it would be given); "" for generated code.
  virtual std::string describe(void **) const { return {}; }
  // The launch as a node of the device's LaunchGraph; nullopt where it can
  // be none (the default: an extern program, a device without graphs).
  virtual std::optional<GraphNode> graph_node(void **, int64_t) const { return std::nullopt; }
};

struct KernelSource {
  std::string name;    // the function the source defines
  std::string source;  // a whole translation unit
  size_t body = 0;     // where the kernel's own text starts (after the target's prelude)
  // A GPU launch: `blocks` blocks of `threads` threads each (0 on a device
  // that splits the outermost loop's global_size itself, as the CPU does).
  int64_t blocks = 0, threads = 0;
  // A launch's `bufs`: this many buffers, then a pointer to each of `vars`
  // runtime scalars' values (codegen::KernelSpec::vars).
  size_t buffers = 0, vars = 0;
};

struct CompileStats {
  int64_t compiled = 0;      // compiler invocations (disk-cache misses)
  int64_t cache_healed = 0;  // unusable cache entries deleted and rebuilt
};

class Device {
 public:
  virtual ~Device() = default;
  virtual const char *name() const = 0;
  // How kernels are generated for it: the codegen passes' parameters, and the
  // renderer's whole translation unit for one linearized program.
  virtual codegen::Target target() const { return {}; }
  virtual KernelSource source(const codegen::KernelSpec &p) const = 0;
  // Memory for `bytes` bytes, freed when the last owner drops it. Contents are
  // unspecified: every kernel writes each element of its output.
  virtual std::shared_ptr<void> allocate(size_t bytes) = 0;
  // Host <-> device copies of `bytes` bytes.
  virtual void copy_in(void *dst, const void *host, size_t bytes) = 0;
  virtual void copy_out(void *host, const void *src, size_t bytes) = 0;
  // Whether the host reads its buffers' memory in place.
  virtual bool host_addressable() const { return false; }
  // A copy between two of its buffers.
  virtual void copy(void *dst, const void *src, size_t bytes) = 0;
  // Waits for the work queued so far (a GPU's launches return before their
  // kernels finish; copies to the host wait by themselves).
  virtual void synchronize() {}
  // Launches `p` and returns its run time in milliseconds, waiting for it
  // (LOOM_DEBUG=2's per-kernel times): the host's clock around the launch by
  // default, a GPU's events on CUDA.
  virtual double timed_launch(const Program &p, void **bufs, int64_t global_size, bool parallel);
  // One program per source, in order; misses compile in parallel.
  virtual std::vector<std::shared_ptr<const Program>> compile(const std::vector<KernelSource> &kernels,
                                                              CompileStats &stats) = 0;
  // Where a kernel's compiled program is cached on disk ("" without a disk cache).
  virtual std::string cache_file(const KernelSource &kernel) = 0;
  // A library program for a canonical GEMM kernel (schedule/gemm_shape.h) taking
  // the same buffers, or nullptr where the device has none for it.
  virtual std::shared_ptr<const Program> extern_gemm(const schedule::GemmShape &) { return nullptr; }
  // Whether extern_gemm takes GEMMs whose B is a convolution's windows read
  // through their views (a convolution library's), so the GEMM split should
  // leave half windows unpacked beside the extern GEMM.
  virtual bool extern_convs() const { return false; }
  // A new, empty graph of launches (runtime/launch_graph.h); nullptr where
  // the device submits launches one at a time only.
  virtual std::unique_ptr<LaunchGraph> launch_graph() { return nullptr; }
};

// The device LOOM_DEVICE names (default CPU). Raises, naming what is missing,
// when that device cannot be used here.
Device &default_device();
// Why the device `name` ("CPU", "CUDA") cannot be used here; "" when it can.
std::string device_missing(const std::string &name);

}  // namespace loom::runtime
