// The coverage report: each per-op sweep test writes its cells to
// <build>/conformance/coverage/<op>.tsv; `--coverage-report` (a ctest test that
// runs after every sweep) joins them into <build>/conformance/coverage.md.
#pragma once
#include <string>
#include <vector>

namespace loom::conformance {

struct CellResult {
  std::string op, dtype, layout, status, detail;  // status: pass / fail / gap / unsupported
  // The backward mark: pass / fail where the table compares a gradient; gap /
  // n/a elsewhere, as torch gives a gradient or not.
  std::string backward, backward_detail;
};

std::string coverage_dir();
void clear_sweep_results(const std::string &op);
void write_sweep_results(const std::string &op, const std::vector<CellResult> &cells);
// Writes coverage.md and prints the one-line summary; non-zero when an op has
// no results or any cell failed or is a gap.
int write_coverage_report();

}  // namespace loom::conformance
