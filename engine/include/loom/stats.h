// What the engine counts as it runs: kernels, compiles, work, host copies,
// memory. The engine fills these; the front end reads and resets them.
#pragma once
#include <cstdint>

namespace loom {

// Statistics the tests read: kernels run and buffers allocated since reset.
struct RunStats {
  int64_t schedules = 0;  // graphs scheduled by realize (a JIT replay schedules none)
  int64_t schedule_hits = 0;  // of those, graphs whose schedule came from the schedule cache
  // Graphs with writes whose donations (which writes store in place) were
  // checked on the graph; a structure met before under the same reference
  // counts reuses the decision instead.
  int64_t donation_checks = 0;
  int64_t kernels_run = 0;
  // JIT replays' launches as device graphs (LOOM_GRAPHS): graphs built,
  // graphs submitted, and kernel nodes whose arguments a replay updated.
  int64_t graphs_built = 0, graph_launches = 0, graph_node_updates = 0;
  int64_t buffers_allocated = 0;  // device buffers created by realize (outputs and intermediates)
  int64_t kernels_compiled = 0;   // cache misses that invoked the compiler
  int64_t cache_healed = 0;       // unusable disk-cache entries deleted and rebuilt
  // Work: ALU operations on values. `work` is what the kernels executed (each
  // value op inside a loop nest times its trip count, every reduction step
  // included, index arithmetic excluded); `work_needed` is what the realized
  // graphs need with every op computed once (an elementwise op once per
  // output element, a reduction once per input element).
  int64_t work = 0;
  int64_t work_needed = 0;
  double realize_seconds = 0;  // wall time inside realize: scheduling, compiling, running kernels
  double kernel_seconds = 0;   // wall time inside kernel launches (realize's or a JIT replay's)
  // Copies between the host and the device (Tensor::from_host and to_host,
  // item(), a value-sized result's count, index checks, JIT replays' uploads
  // and checks). On a GPU each read waits for the work queued before it; a
  // check that reads the CPU device's memory in place counts as the read a
  // GPU would make.
  int64_t host_writes = 0, host_write_bytes = 0;
  int64_t host_reads = 0, host_read_bytes = 0;
  // Collectives between processes (loom/distributed.h) and the bytes each
  // process contributed to them.
  int64_t collectives = 0, collective_bytes = 0;
};
RunStats run_stats();
void reset_run_stats();

// Device buffers alive now (allocated and not yet freed) and their bytes.
struct MemoryStats {
  int64_t live_buffers = 0;
  int64_t live_bytes = 0;
  int64_t peak_bytes = 0;  // the most live at once since reset_peak_memory()
};
MemoryStats memory_stats();
void reset_peak_memory();  // the peak restarts from what is live now

}  // namespace loom
