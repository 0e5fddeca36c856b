// The op table against torch alone (no engine kernels run): a dtype an entry
// leaves out must be one torch rejects, and an entry without a backward case
// must be one torch gives no gradient for. Otherwise the coverage report would
// call a missing path "unsupported" or "n/a" where torch has one.
#include <gtest/gtest.h>

#include <sstream>

#include "harness.h"

namespace loom::conformance {
namespace {

// The sweep's cases (shape (2, 3, 1, 4), one per layout) and random ones:
// ranks 0-4 with size-0 and size-1 dims, where torch's dtype checks have
// shortcuts (argmax over a size-1 dim runs no kernel).
std::vector<CaseSpec> cases_for(const OpEntry &op, DType dt) {
  std::vector<CaseSpec> out;
  auto add = [&](Shape shape, Layout l, uint64_t seed) {
    CaseSpec spec;
    spec.op = &op;
    spec.dtype = dt;
    spec.shape = clamp_numel(std::move(shape), op.max_numel);
    if (op.arity > 0) spec.layouts = {l};
    spec.seed = seed;
    out.push_back(spec);
  };
  uint64_t seed = std::hash<std::string>{}(op.name + "/" + dtype_name(dt));
  for (Layout l : kAllLayouts) add({2, 3, 1, 4}, l, seed++);
  Rng rng(seed);
  for (int i = 0; i < 24; ++i) {
    Shape s(static_cast<size_t>(rng.uniform(0, 4)));
    for (int64_t &d : s) d = rng.pick(std::vector<int64_t>{0, 1, 1, 2, 3, 4});
    add(s, kAllLayouts[rng.uniform(0, static_cast<int64_t>(std::size(kAllLayouts)) - 1)], rng.next());
  }
  return out;
}

// "op dtype: torch accepts ..." for the first case torch accepts, or "".
std::string torch_accepts(const OpEntry &op, DType dt, int *asked) {
  for (const CaseSpec &spec : cases_for(op, dt)) {
    PreparedCase c;
    try {
      c = prepare_case(spec);
    } catch (const std::exception &) {
      continue;  // the generators cannot build this shape for the op; the other cases count
    }
    ++*asked;
    if (const std::optional<HostTensor> want = torch_forward(op, c))
      return c.header + "\n  torch returns " + dtype_name(want->dtype) + " " + shape_str(want->shape);
  }
  return "";
}

TEST(OpTable, EveryDTypeLeftOutIsOneTorchRejects) {
  int asked_total = 0;
  for (const OpEntry &op : op_table()) {
    for (DType dt : kAllDTypes) {
      if (op.supports(dt)) continue;
      int asked = 0;
      const std::string accepted = torch_accepts(op, dt, &asked);
      EXPECT_EQ(accepted, "") << op.name << " leaves out " << dtype_name(dt)
                              << ", but torch accepts it: extend the entry and the engine\n  " << accepted;
      EXPECT_GT(asked, 0) << op.name << " " << dtype_name(dt) << ": no case could be built";
      asked_total += asked;
    }
  }
  EXPECT_GT(asked_total, 1000) << "too few cases asked of torch";
}

TEST(OpTable, EveryEntryWithoutBackwardIsOneTorchDoesNotDifferentiate) {
  int asked_total = 0;
  for (const OpEntry &op : op_table()) {
    for (DType dt : op.dtypes) {
      if (!is_float(dt) || op.backward) continue;
      for (const CaseSpec &spec : cases_for(op, dt)) {
        CaseResult g;
        try {
          g = probe_torch_gradient(spec);
        } catch (const std::exception &) {
          continue;  // the generators cannot build this shape for the op
        }
        ++asked_total;
        EXPECT_NE(g.outcome, Outcome::Gap) << op.name << " has no backward case, but torch differentiates it\n"
                                           << g.report;
        if (g.outcome == Outcome::Gap) break;
      }
    }
  }
  EXPECT_GT(asked_total, 100) << "too few cases asked of torch";
}

}  // namespace
}  // namespace loom::conformance
