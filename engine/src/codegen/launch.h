// A GPU target's launch plan for one linearized kernel: which leading output
// loops become the thread index (one thread per output), and whether a
// reduction with few outputs, or one reading each output's terms
// consecutively (a row sum), runs one block of threads per output
// ("grouped": its per-thread loops strided over the block, each with the
// loops nested alone in it as one loop, the threads' accumulators folded).
// A scan along lines of at least 4 elements per thread of a block runs a
// block per line too: its loop (`scan`) splits into a run of the line per
// thread, scanned twice (the run's total; then, from the block's exclusive
// scan of the totals, its outputs). kernel_spec plans it from the Target's
// launch parameters; a CPU target (Target::block_threads 0) plans none.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "codegen/target.h"
#include "uop/uop.h"

namespace loom::codegen {

using uop::UOpRef;
struct KernelSpec;

struct Launch {
  int64_t block_threads = 0;            // the target's threads per block; 0: not planned (a CPU target)
  std::vector<UOpRef> threads;          // output loops that are the thread index, outermost first
  std::set<const uop::UOp *> collapsed; // their RANGE nodes
  std::set<const uop::UOp *> strided;   // grouped: reduction loops strided over the block
  // grouped: a strided loop's perfectly nested inner loops (outermost first),
  // strided over the block with it as one loop; and those inner loops
  std::map<const uop::UOp *, std::vector<UOpRef>> flattened;
  std::set<const uop::UOp *> inner_flat;
  int64_t outputs = 1;                  // product of the threads' loops
  bool grouped = false;
  const uop::UOp *scan = nullptr;       // grouped: the scanned loop, a run per thread

  // The launch: blocks of threads.
  int64_t threads_per_block() const { return grouped || !threads.empty() ? block_threads : 1; }
  int64_t blocks() const {
    if (grouped) return outputs;
    return threads.empty() ? 1 : (outputs + block_threads - 1) / block_threads;
  }
};

Launch plan_launch(const KernelSpec &p, const Target &t);

// A RANGE's trip count.
inline int64_t trip(const UOpRef &range) { return static_cast<int64_t>(range->src[0]->const_value()); }

}  // namespace loom::codegen
