// The positions a mask selects: the device's search gives, for every mask,
// the positions a plain loop over the mask's values gives, and moves only
// the count to the host.
#include "tensor/mask_positions.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace loom {
namespace {

std::vector<int64_t> positions_by_loop(const Tensor &mask) {
  const HostTensor h = mask.to_host();
  std::vector<int64_t> p;
  for (int64_t i = 0; i < h.numel(); i++)
    if (h.get_int(i)) p.push_back(i);
  return p;
}

std::vector<int64_t> values(const Tensor &t) {
  const HostTensor h = t.to_host();
  std::vector<int64_t> v;
  for (int64_t i = 0; i < h.numel(); i++) v.push_back(h.get_int(i));
  return v;
}

Tensor bool_mask(const std::vector<int> &bits, const Shape &shape) {
  std::vector<double> v(bits.begin(), bits.end());
  return Tensor::from_vector(v, shape, DType::Bool);
}

TEST(MaskPositions, SearchFindsWhatALoopFinds) {
  std::mt19937 rng(7);
  std::vector<std::pair<std::vector<int>, Shape>> cases = {
      {{1}, {1}}, {{0}, {1}}, {{0, 1}, {2}}, {{1, 0}, {2}}, {{0, 0, 0, 0, 0, 0, 1}, {7}}, {{1, 0, 0, 0, 0, 0, 0}, {7}}};
  for (int64_t n : {5, 64, 1000, 4097})
    for (double density : {0.0, 0.1, 0.5, 0.9, 1.0}) {
      std::vector<int> bits(static_cast<size_t>(n));
      for (auto &b : bits) b = std::uniform_real_distribution<double>(0, 1)(rng) < density;
      cases.push_back({bits, {n}});
    }
  for (const auto &[bits, shape] : cases) {
    const Tensor mask = bool_mask(bits, shape);
    const std::vector<int64_t> want = positions_by_loop(mask);
    EXPECT_EQ(values(tensor::mask_positions_searched(mask)), want) << "mask of " << bits.size();
  }
}

TEST(MaskPositions, SearchReadsAStridedMaskInRowMajorOrder) {
  // A transposed, expanded mask: positions count over the logical row-major order.
  const Tensor base = bool_mask({1, 0, 0, 1, 1, 0}, {2, 3});
  const Tensor mask = base.transpose(0, 1).reshape({3, 1, 2}).expand({3, 4, 2});
  EXPECT_EQ(values(tensor::mask_positions_searched(mask)), positions_by_loop(mask));
}

TEST(MaskPositions, SearchMovesOnlyTheCountToTheHost) {
  const Tensor warm = tensor::mask_positions_searched(bool_mask({0, 1, 1, 0, 1}, {5}));
  values(warm);
  const Tensor mask = bool_mask({1, 1, 0, 1, 0, 0, 1, 1, 0, 1, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0}, {20});
  mask.to_host();  // realized before counting
  reset_run_stats();
  const Tensor p = tensor::mask_positions_searched(mask);
  EXPECT_EQ(run_stats().host_reads, 1);   // the count
  EXPECT_EQ(run_stats().host_writes, 0);  // no positions uploaded
  EXPECT_EQ(p.shape(), Shape{12});
}

}  // namespace
}  // namespace loom
