// Lowering: a kernel AST (views over buffers, ALU, REDUCE_AXIS) becomes a
// kernel graph over loop variables: RANGE, LOAD, ALU, REDUCE, STORE.
#pragma once
#include <cstdint>

#include "uop/uop.h"

namespace loom::codegen {

using uop::UOpRef;

struct LoweredKernel {
  // SINK(STORE(DEFINE_GLOBAL 0, index, value), ...): one store per element of
  // an unrolled group (see below), in element order.
  UOpRef sink;
  std::vector<UOpRef> out_ranges;  // loop variables of the output, outermost first
  bool serial = false;             // stores may collide: never split across threads
  // The stores of an upcast axis's remainder (below), each element unrolled
  // like a group's, inside the first `tail_depth` output loops after the
  // other loops close. Null when there is none.
  UOpRef tail_sink;
  size_t tail_depth = 0;
  // Each sum split into lanes (lower's sum_lanes): its partials, lane 0 first.
  std::vector<std::vector<UOpRef>> lane_sums;
};

// Output axes one loop iteration computes several elements of: (axis, how
// many), the optimize pass's choice; the last one's elements vary fastest
// in a group (the vectorize pass's lanes).
using Upcast = std::vector<std::pair<int64_t, int64_t>>;

// Each upcast axis counts groups of its amount; an iteration computes every
// element of the group (the innermost upcast axis varying fastest), one store
// each, and a reduction's elements share one loop nest, each with its own
// accumulator, reducing in the same order as without the upcast. A float sum
// of 1024 terms or more adds in two levels: partial sums of its innermost
// ~sqrt(n) terms, added into the total (torch's CPU sums cascade likewise).
// In a kernel without reductions, the innermost axis's amount need not divide
// it: the axis's last (size % amount) elements are then a tail, each
// computed unrolled after the groups' loop, inside the outer loops.
// `fold_short`: reductions that unrolled_reduction() accepts fold in registers.
// `sum_lanes` > 1: a sum that splits_into_lanes() accepts adds in that many
// partials, lane j taking the terms whose index along the input's last axis
// is j modulo sum_lanes (each partial in the order above, over a loop nest
// the lanes share), then partial 0 + partial 1 + ... in lane order. Where
// sum_lanes does not divide that axis (a 15x15 image), the inner level is
// the axis's whole groups, after which each lane adds its term past them (or
// 0), and the other axes add in the outer level. The vectorize pass makes the
// partials one vector accumulator where the terms are consecutive in memory
// (a row sum, a per-channel sum over an image).
// `two_level` false: every sum adds in one level.
LoweredKernel lower(const UOpRef &ast, const Upcast &up, bool fold_short = false, int64_t sum_lanes = 1,
                    bool two_level = true);

// The value of `value`, an AST node, at logical index `idx` (int64
// expressions over leaves of the caller's), as lower() computes each
// element: loads, ALU and index arithmetic, with `node` inside it taking the
// value `given` wherever it is read (a GEMM template's accumulator for its
// sum: codegen/gemm_epilogue.h).
UOpRef value_at(const UOpRef &value, const std::vector<UOpRef> &idx, const UOpRef &node, const UOpRef &given);

// The two levels of a float sum (above): how many trailing terms of each
// reduced axis (`sizes`, outermost first) one partial sum takes; all 1 for
// one level (under 1024 terms, or no partial of 8 to all but one of them).
std::vector<int64_t> sum_inner_level(const std::vector<int64_t> &sizes);

// A float32 sum of at least 64 terms whose axes include its input's last,
// that axis at least `lanes` long (> 1).
bool splits_into_lanes(const uop::UOp &reduce, int64_t lanes);

// A reduction of at most kUnrolledReduce elements (a pool's window) of
// float32, float64 or int64, folding by add, max or min, may fold in
// registers (lower's fold_short; the pipeline's default, off under
// LOOM_NOOPT), in loop order, with no loop or accumulator: its kernel is
// then elementwise (the optimize pass groups its outputs). Halves and
// products keep the loop (an accumulator adds without rounding to the dtype).
constexpr int64_t kUnrolledReduce = 9;
bool unrolled_reduction(const uop::UOp &reduce);

// A kernel value's reductions (REDUCE_AXIS nodes; with skip_short, not those
// unrolled_reduction() accepts): how many, the last in source-first order, and
// whether they all reduce inputs of one shape, none reading another's result.
struct Reductions {
  int64_t count = 0;
  UOpRef last;
  bool one_input = true;
};
Reductions reductions(const UOpRef &value, bool skip_short);

// For each load of `value` (a kernel's stored value, output shape `shape`),
// which output axes its address depends on.
std::vector<std::vector<bool>> load_axes(const UOpRef &value, const Shape &shape);
// Which axes of `shape` a float32 exp, erf, log or tanh of `value` depends on.
std::vector<bool> costly_axes(const UOpRef &value, const Shape &shape);
// For each load of `value` (over `shape`), how many elements its address
// moves per step along each axis: 0 where it does not move, kVaries where
// not by one amount (the axis's index divided or taken modulo).
constexpr int64_t kVaries = INT64_MIN;
std::vector<std::vector<int64_t>> load_strides(const UOpRef &value, const Shape &shape);
// Whether some load of lane 1 of a sum of `value` split into `lanes` reads the
// element after lane 0's (the terms are consecutive in memory).
bool lanes_load_consecutive(const UOpRef &value, const Shape &shape, int64_t lanes);

}  // namespace loom::codegen
