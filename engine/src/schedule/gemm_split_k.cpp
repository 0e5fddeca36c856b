#include "schedule/gemm_split_k.h"

#include <algorithm>
#include <vector>

namespace loom::schedule {

int64_t k_chunks(int64_t outputs, int64_t terms) {
  if (outputs <= 0 || outputs > kSplitKMaxOutputs) return 1;
  for (int64_t c = std::min(terms / kSplitKChunk, kSplitKPartials / outputs); c >= 2; c--)
    if (terms % c == 0) return c;
  return 1;
}

std::optional<shape::ShapeTracker> chunked(const shape::ShapeTracker &st, size_t nb, int64_t chunks) {
  Shape s = st.shape();
  s[nb + 1] /= chunks;
  s.insert(s.begin() + static_cast<std::ptrdiff_t>(nb) + 1, chunks);  // [batch..., m, chunks, k / chunks, n]
  std::vector<int64_t> order;
  for (size_t d = 0; d < s.size(); d++) order.push_back(static_cast<int64_t>(d));
  std::swap(order[nb], order[nb + 1]);  // the chunks before m: a batch axis
  shape::ShapeTracker out = st.reshape(s).permute(order);
  if (out.views.size() != 1) return std::nullopt;
  return out;
}

}  // namespace loom::schedule
