// A gathered GEMM operand's element (schedule::GemmOperand::view) as index
// arithmetic, for a template to spell out: the flat index into its buffer
// and its validity, per element, and where the views allow it, per run.
#pragma once
#include <optional>
#include <vector>

#include "schedule/gemm_shape.h"
#include "uop/uop.h"

namespace loom::codegen {

// The leaves: RANGE nodes whose argument names a coordinate. Per element:
// batch axis d of the GEMM is kGatherBatch + d, the operand's row and
// column (B: k and n) kGatherRow and kGatherCol. Per run: the flat index of
// the batch axes the operand reads is kGatherFlatBatch, the row's unmerged
// axes kGatherRowAxis + i, the column's kGatherColAxis + j.
constexpr int64_t kGatherRow = -1, kGatherCol = -2, kGatherBatch = 0, kGatherRowAxis = 1000, kGatherColAxis = 2000,
                  kGatherFlatBatch = 3000;

struct GatherIndex {
  uop::UOpRef flat, valid;
};

// B in runs along its innermost unmerged column axis, a row (k) fixed, or
// along its innermost row axis, a column (n) fixed (`along_rows`): the
// element at coordinates (batch, K, N) is at `flat`, the run's axis stepping
// it by `step`; it is valid where `fixed_valid` holds and each run axis's
// coordinate lies at or above every `lower[j]` and below every `upper[j]`
// (those over the flat batch index and the fixed coordinates only).
struct GatherRuns {
  bool along_rows = false;
  std::vector<int64_t> batch_dims;        // the GEMM's batch axes the operand reads, outermost first
  Shape batch_sizes, row_sizes, col_sizes;  // the operand's unmerged axes: batch, rows (k), columns (n)
  std::vector<size_t> batch_at, row_at, col_at;  // where they are in the view's shape (its other axes: size 1)
  uop::UOpRef flat, fixed_valid;
  int64_t step = 0;
  std::vector<std::vector<uop::UOpRef>> lower, upper;  // per run axis
  int64_t run_size() const { return along_rows ? row_sizes.back() : col_sizes.back(); }
};

// B's (is_b) or A's, when gathered; nullopt where not, or where the
// arithmetic holds an op other than integer arithmetic, comparisons and
// logic (none that view indexing makes).
std::optional<GatherIndex> gather_index(const schedule::GemmShape &g, bool is_b);

// B's runs along its columns or rows, where its views are a merge of
// unmerged axes (batch, rows, columns) read without division by the run
// axes' coordinates, each mask bounding one run axis; nullopt otherwise.
std::optional<GatherRuns> gather_runs(const schedule::GemmShape &g, bool along_rows);

// Whether gather_runs finds runs at all (tests turn it off to run the
// per-element gather); returns the previous value.
bool set_gather_runs(bool on);

}  // namespace loom::codegen
