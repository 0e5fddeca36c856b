// The codegen driver: runs the named passes over one kernel AST, in order,
// like a script. LOOM_DEBUG=4 prints the program after each pass.
//   merge axes adjacent axes every view reads as one become one (output
//              axes of elementwise kernels, reduced axes of reductions);
//              skipped under LOOM_NOOPT=1
//   block      a matmul-shaped reduction too large for L2 runs its output
//              columns in blocks, outermost (block.h); skipped under
//              LOOM_NOOPT=1
//   optimize   which output axes an iteration computes several elements of
//              (upcast groups and tiles); skipped under LOOM_NOOPT=1
//   lower      views -> index expressions over loop variables (RANGE, LOAD,
//              ALU, REDUCE, STORE); index arithmetic simplified as it is
//              built; short reductions folded in registers (not under
//              LOOM_NOOPT=1)
//   vectorize  an upcast group's lanes become vector UOps (vectorize.h);
//              skipped under LOOM_NOOPT=1
//   linearize  execution order with explicit loops and accumulators
// A SORT kernel is a library kernel: no passes, the renderer's template; so
// is a half GEMM on a target with tensor cores, and a float32 GEMM on one
// with packed_gemm (codegen/gemm_tiles.h: the plan, logged as "packed GEMM").
#pragma once
#include <string>
#include <vector>

#include "codegen/linearize.h"
#include "codegen/lowerer.h"
#include "codegen/target.h"
#include "schedule/schedule.h"
#include "uop/pattern.h"

namespace loom::codegen {

// What the passes did to the kernels compiled on this thread, for the viewer
// (LOOM_VIZ): while a log is set, kernel_spec appends each pass's result.
struct PassRecord {
  std::string pass, text;  // the text LOOM_DEBUG=4 prints after the pass
  // Lines of `text` that are nodes the previous pass's graph did not have
  // (nodes are interned: an unchanged node is the same node); empty where the
  // pass's result is not a graph (optimize's choice, the linear program).
  std::vector<int> changed;
  uop::RuleCounts rules;  // rewrite rules that fired during the pass, by where they were written
};
using PassLog = std::vector<PassRecord>;
void set_pass_log(PassLog *log);  // this thread; nullptr stops

// The kernel as the optimize pass sees it: the merge and block passes' result
// (the AST itself under LOOM_NOOPT=1). optimize() and upcast_candidates() take this.
UOpRef optimize_input(const UOpRef &ast, const Target &t = {});

// Whether the item's program is a library kernel, rendered from a template
// (a SORT, a GEMM on tensor cores or as packed panels): no upcast applies.
bool from_template(const schedule::ScheduleItem &item, const Target &t);

// The program of one schedule item (its AST, name, buffers' dtypes and GEMM
// shape). `up`, when given, replaces the optimize pass's choice (LOOM_BEAM's
// candidates, over optimize_input(item.ast)).
KernelSpec kernel_spec(const schedule::ScheduleItem &item, const Upcast *up = nullptr, const Target &t = {});

}  // namespace loom::codegen
