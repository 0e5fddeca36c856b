// The program fuzzer: random straight-line programs of op-table ops, movement
// ops and in-place writes through views, run in loom and in libtorch with
// every value and every leaf's gradient compared; failures shrink to a short
// program printed as a listing that `loom_fuzz_programs --replay` runs again.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gen.h"
#include "program.h"  // reference/program.h: the oracle's side

namespace loom::fuzz {

using reference::Attrs;
using StepKind = reference::ProgramStep::Kind;

// One line of a program. Values are numbered by the steps that define them
// (leaves and ops); writes and backward define none.
struct Step {
  StepKind kind = StepKind::Op;
  std::string op;         // Op: an op-table entry name; Write: copy_ / add_ / masked_fill_
  std::vector<int> args;  // indices of earlier steps
  Attrs attrs;            // Op attrs; masked_fill_: value
  // Leaf: values drawn from `seed` in `domain`; Backward: the weight's seed.
  DType dtype = DType::Float32;
  Shape shape;
  uint64_t seed = 0;
  conformance::Domain domain;
  bool grad = false;
};

struct Program {
  std::vector<Step> steps;
  uint64_t seed = 0;  // the generator's seed (0: unknown, e.g. hand-written)
};

// A compact listing, one step a line, e.g.
//   t0 = leaf float32 (2, 3) seed=7 grad
//   t1 = slice t0 dim=1 start=0 step=2
//   copy_ t1 t2
//   backward t3 seed=5
std::string listing(const Program &p);
// Parses listing()'s format ('#' starts a comment); throws std::runtime_error naming the line.
Program parse_listing(const std::string &text);

// A random program: leaves of random shapes (0-d, size-0 and size-1 dims
// included) and dtypes, then ops, views and writes, and a backward on
// floating programs. Deterministic in `seed`.
Program generate(uint64_t seed, int max_steps);

struct Verdict {
  bool pass = true;
  bool compared = false;  // false: both rejected the program (the same step or not)
  std::string kind;       // a failure's class ("value", "torch rejects", "loom rejects", "crash", ...)
  std::string message;
};
// Runs p in loom and in libtorch and compares.
Verdict check(const Program &p);

// A loom bug the fuzzer has found and a regression case guards (kept out of
// the default ctest set until fixed). A run reports programs that hit one
// apart: neither passed nor a new failure.
struct KnownFailure {
  const char *kind;        // Verdict::kind
  const char *substring;   // in Verdict::message
  const char *regression;  // conformance/regressions/<file>
  const char *what;
};
const KnownFailure *known_failure(const Verdict &v);

// Removes steps (and what depends on them) while the program still fails with
// the same kind of failure; stops after `budget_seconds`.
Program shrink(const Program &p, const Verdict &failure, double budget_seconds);

}  // namespace loom::fuzz
