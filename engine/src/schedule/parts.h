// Cutting one schedule item into several: the passes that split a kernel
// (gemm.h's GEMMs, split_reduce.h's long reductions) describe the parts once
// per distinct kernel AST, over references to the item's buffers and to new
// scratch buffers, and apply_splits puts them in the schedule.
#pragma once
#include <functional>
#include <mutex>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "schedule/schedule.h"
#include "shape/shape_tracker.h"

namespace loom::schedule {

// One item of a split, its buffers as references: r < slots is the original
// item's slot r, r >= slots the split's scratch buffer r - slots.
struct Part {
  UOpRef ast;
  std::string name;  // empty: the split item's
  std::vector<int64_t> refs;
};

struct Split {
  UOpRef key;  // keeps the interned AST alive while it keys the memo
  size_t slots = 0;
  std::vector<std::pair<DType, int64_t>> scratch;  // dtype and element count
  std::vector<Part> parts;                         // empty: the item stays as it is

  explicit Split(const UOpRef &ast);
  // A new scratch buffer's reference.
  int64_t add_scratch(DType dt, int64_t elements);
};

// The one REDUCE_AXIS of a kernel that stores one value through a row-major
// tracker, with no scan or sort; null for any other kernel.
UOpRef only_reduction(const UOpRef &ast);

UOpRef global(DType dt, int64_t slot);
// prefix_d0_d1_... (prefix_0d for none), as the scheduler names kernels
std::string dims_name(const char *prefix, const std::vector<int64_t> &dims);

// A kernel storing `value` (over references) into reference `out` through
// `st`: its DEFINE_GLOBALs numbered densely, the output slot 0.
Part make_part(const UOpRef &value, int64_t out, DType out_dtype, const shape::ShapeTracker &st, std::string name);

// Splits by kernel AST, `analyze` run once per distinct AST (until clear()).
class SplitMemo {
 public:
  explicit SplitMemo(std::function<Split(const UOpRef &)> analyze) : analyze_(std::move(analyze)) {}
  std::shared_ptr<const Split> get(const UOpRef &ast);
  void clear();

 private:
  std::function<Split(const UOpRef &)> analyze_;
  std::mutex mu_;
  std::unordered_map<const uop::UOp *, std::shared_ptr<const Split>> map_;
};

// Replaces each item of `sched` that `memo` splits by its parts; their scratch
// buffers join `sched.transient`.
void apply_splits(Schedule &sched, SplitMemo &memo);

}  // namespace loom::schedule
