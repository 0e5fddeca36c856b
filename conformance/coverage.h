// The coverage report: each per-op sweep test writes its cells to
// <build>/conformance/coverage/<op>.tsv; `--coverage-report` (a ctest test that
// runs after every sweep) joins them into <build>/conformance/coverage.md.
#pragma once
#include <string>
#include <vector>

namespace loom::conformance {

struct CellResult {
  std::string op, dtype, layout, status, detail;  // status: pass / fail / unsupported
  // The backward case of a differentiable entry on a floating dtype: pass /
  // fail, or empty where there is none.
  std::string backward, backward_detail;
};

std::string coverage_dir();
void clear_sweep_results(const std::string &op);
void write_sweep_results(const std::string &op, const std::vector<CellResult> &cells);
// Writes coverage.md and prints the one-line summary; non-zero when an op has no results.
int write_coverage_report();

}  // namespace loom::conformance
