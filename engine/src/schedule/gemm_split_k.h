// Split-K for the GEMM split (schedule/gemm.h): a GEMM of few outputs and a
// long sum (hlb's whitening covariance: 12 x 12 over 4.8 million terms) runs
// as a batch of GEMMs over chunks of its terms, each chunk's sums a partial,
// the partials added by its epilogue. One GEMM would be a single tile (one
// block of a GPU, one core); the chunks fill the device.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>

#include "shape/shape_tracker.h"

namespace loom::schedule {

constexpr int64_t kSplitKMaxOutputs = 128 * 128;  // batch * m * n: at most one tensor-core tile
constexpr int64_t kSplitKChunk = 4096;            // the fewest terms a chunk sums
constexpr int64_t kSplitKPartials = 1 << 20;      // the most partials (chunks * outputs)

// How many chunks a GEMM of `outputs` outputs, each a sum of `terms`
// products, sums in: the most that divide the terms into chunks of at least
// kSplitKChunk, within kSplitKPartials; 1 (no split) where its outputs are
// many, its terms few, or no divisor fits.
int64_t k_chunks(int64_t outputs, int64_t terms);

// An operand's view over the GEMM's shape [batch..., m, k, n] (nb batch
// axes) as one over [batch..., chunks, m, k / chunks, n]; nullopt where that
// is not one view (a gathered operand's stack).
std::optional<shape::ShapeTracker> chunked(const shape::ShapeTracker &st, size_t nb, int64_t chunks);

}  // namespace loom::schedule
