// The deterministic sweep: every op-table entry over every dtype x layout,
// once each, on a fixed shape. Feeds the coverage report.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <stdexcept>

#include "coverage.h"
#include "harness.h"

namespace loom::conformance {
namespace {

// Rank 4 (so channels_last is NHWC) with a size-1 dim; 24 elements.
const Shape kSweepShape = {2, 3, 1, 4};
constexpr int kMaxReportedFailures = 5;

std::vector<std::string> op_names() {
  std::vector<std::string> names;
  for (const OpEntry &e : op_table()) names.push_back(e.name);
  return names;
}

// The values of `all` whose names the comma-separated list in the environment
// variable `var` gives, in that list's order; all of them where it is unset or
// empty. A name that is none of them is an error naming the variable.
template <typename T, size_t N, typename Name>
std::vector<T> chosen(const char *var, const T (&all)[N], Name name) {
  const char *env = std::getenv(var);
  if (env == nullptr || *env == '\0') return {std::begin(all), std::end(all)};
  std::vector<T> out;
  std::stringstream list(env);
  for (std::string item; std::getline(list, item, ',');) {
    const T *it = std::find_if(std::begin(all), std::end(all), [&](T v) { return item == name(v); });
    if (it == std::end(all)) {
      std::string names;
      for (T v : all) names += std::string(names.empty() ? "" : ", ") + name(v);
      throw std::invalid_argument(std::string(var) + ": '" + item + "' is none of " + names);
    }
    out.push_back(*it);
  }
  return out;
}

// The sweep's cases of one op: every dtype, every layout (none for arity 0);
// LOOM_SWEEP_DTYPES and LOOM_SWEEP_LAYOUTS (names, comma-separated) choose fewer.
std::vector<CaseSpec> sweep_cases(const OpEntry &op) {
  const std::vector<DType> dtypes = chosen("LOOM_SWEEP_DTYPES", kAllDTypes, [](DType d) { return dtype_name(d); });
  const std::vector<Layout> layouts = chosen("LOOM_SWEEP_LAYOUTS", kAllLayouts, layout_name);
  std::vector<CaseSpec> specs;
  for (DType dt : dtypes) {
    std::vector<std::vector<Layout>> layout_sets;
    if (op.arity == 0) layout_sets.push_back({});
    for (Layout l : layouts)
      if (op.arity > 0) layout_sets.push_back({l});
    for (const auto &ls : layout_sets) {
      CaseSpec spec;
      spec.op = &op;
      spec.dtype = dt;
      spec.shape = clamp_numel(kSweepShape, op.max_numel);
      spec.layouts = ls;
      spec.seed = std::hash<std::string>{}(op.name + "/" + dtype_name(dt) + "/" + (ls.empty() ? "-" : layout_name(ls[0])));
      specs.push_back(spec);
    }
  }
  return specs;
}

// The backward mark is compared where the entry is differentiable on the
// case's dtype; elsewhere torch is asked whether it would give a gradient.
bool compares_backward(const CaseSpec &spec) {
  return spec.op->backward && is_float(spec.dtype) && spec.op->supports(spec.dtype);
}

class OpSweep : public ::testing::TestWithParam<std::string> {};

TEST_P(OpSweep, EveryDTypeAndLayout) {
  const OpEntry &op = *find_op(GetParam());
  clear_sweep_results(op.name);
  const std::vector<CaseSpec> specs = sweep_cases(op);
  compile_cases_ahead([&] {
    for (const CaseSpec &spec : specs) {
      run_case(spec);
      if (compares_backward(spec)) run_grad_case(spec);
    }
  });
  std::vector<CellResult> cells;
  int failures = 0;
  for (const CaseSpec &spec : specs) {
    const std::string layout = spec.layouts.empty() ? "-" : layout_name(spec.layouts[0]);
    const CaseResult r = run_case(spec);
    // A dtype inside the entry whose input both torch and the engine reject
    // compares no values: it counts as unsupported (both reject), not as a pass.
    const bool both_reject = r.outcome == Outcome::Pass && r.summary.rfind("both reject", 0) == 0;
    CellResult cell{op.name, dtype_name(spec.dtype), layout, both_reject ? "unsupported" : outcome_name(r.outcome),
                    r.summary, "", ""};
    const bool failed = r.outcome == Outcome::Fail || r.outcome == Outcome::Gap;
    if (failed && ++failures <= kMaxReportedFailures) ADD_FAILURE() << r.report;
    const bool compared = compares_backward(spec);
    const CaseResult g = compared ? run_grad_case(spec) : probe_torch_gradient(spec);
    // A compared case with nothing to compare (torch rejects the input) is n/a, not a pass.
    cell.backward = g.outcome == Outcome::Fail ? "fail"
                    : g.outcome == Outcome::Gap ? "gap"
                    : compared && g.summary.empty() ? "pass"
                                                    : "n/a";
    cell.backward_detail = g.summary;
    if ((g.outcome == Outcome::Fail || g.outcome == Outcome::Gap) && ++failures <= kMaxReportedFailures)
      ADD_FAILURE() << g.report;
    cells.push_back(cell);
  }
  write_sweep_results(op.name, cells);
  if (failures > kMaxReportedFailures)
    ADD_FAILURE() << failures << " cells failed in all (first " << kMaxReportedFailures << " shown); see coverage.md";
}

INSTANTIATE_TEST_SUITE_P(Ops, OpSweep, ::testing::ValuesIn(op_names()),
                         [](const ::testing::TestParamInfo<std::string> &info) { return info.param; });

}  // namespace
}  // namespace loom::conformance
