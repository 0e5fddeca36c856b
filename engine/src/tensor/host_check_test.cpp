// Where the device's memory is not the host's, a check of index values that
// the host uploaded reads the host's copy of them: no kernel runs and nothing
// is read from the device, so the check does not wait for queued work. A
// kernel or a copy that writes the buffer afterwards drops that copy, and the
// check reads the device's values again.
#include <gtest/gtest.h>

#include "engine/capture.h"
#include "loom/error.h"
#include "loom/tensor.h"
#include "uop/graph.h"

namespace loom {
namespace {

const uop::Buffer *buffer_of(const Tensor &t) { return uop::base_of(t.uop())->arg_as<uop::BufferArg>().buffer.get(); }

TEST(HostCopy, ACheckOfAnUploadedIndexSliceRunsNoKernelAndReadsNothingFromTheDevice) {
  if (engine::host_addressable()) GTEST_SKIP() << "the device's memory is the host's: checks read it in place";
  Tensor x = Tensor::from_vector({0, 1, 2, 3, 4, 5, 6, 7}, {8, 1});
  const Tensor idx = Tensor::from_vector({7, 1, 0, 3, 5, 2, 6, 4}, {8}, DType::Int64);
  x.index_select(0, idx.slice(0, 2, 6)).realize();  // compiles the gather
  reset_run_stats();
  Tensor r = x.index_select(0, idx.slice(0, 2, 6));
  EXPECT_EQ(run_stats().kernels_run, 0);  // the check copied nothing into a new buffer
  EXPECT_EQ(run_stats().host_reads, 1);  // the values, from the host's copy of the upload
  const HostTensor h = r.to_host();
  const std::vector<double> want = {0, 3, 5, 2};
  for (int64_t i = 0; i < 4; i++) EXPECT_EQ(h.get(i), want[static_cast<size_t>(i)]);
  // A strided view, gathered on the host: only the values it selects are checked.
  const Tensor spaced = Tensor::from_vector({3, 99, 1, 99, 2, 99, 0, 99}, {8}, DType::Int64);
  reset_run_stats();
  const Tensor every_other = x.index_select(0, spaced.slice(0, 0, 8, 2));
  EXPECT_EQ(run_stats().kernels_run, 0);
  const HostTensor g = every_other.to_host();
  const std::vector<double> picked = {3, 1, 2, 0};
  for (int64_t i = 0; i < 4; i++) EXPECT_EQ(g.get(i), picked[static_cast<size_t>(i)]);
  EXPECT_THROW(x.index_select(0, spaced.slice(0, 1, 8, 2)), IndexError);
}

TEST(HostCopy, AKernelOrACopyWritingTheBufferDropsTheHostsCopy) {
  const Tensor x = Tensor::from_vector({0, 1, 2}, {3});
  Tensor idx = Tensor::from_vector({0, 1, 2}, {3}, DType::Int64);
  const uop::Buffer *home = buffer_of(idx);
  EXPECT_NO_THROW(x.index_select(0, idx));
  idx.assign(idx.add(Tensor::full({}, 5, DType::Int64)));
  idx.realize();
  ASSERT_EQ(buffer_of(idx), home);  // written in place, by a kernel
  EXPECT_THROW(x.index_select(0, idx), IndexError);
  Tensor fresh = Tensor::from_vector({2, 1, 0}, {3}, DType::Int64);
  EXPECT_NO_THROW(x.index_select(0, fresh));
  fresh.assign(Tensor::from_vector({0, 9, 1}, {3}, DType::Int64));
  fresh.realize();
  EXPECT_THROW(x.index_select(0, fresh), IndexError);
}

// An index larger than an upload's host copy is checked by its least and
// greatest values, folded on the device: 16 bytes cross, not the index.
TEST(HostCopy, ALargeIndexIsCheckedByItsEndsFoldedOnTheDevice) {
  if (engine::host_addressable()) GTEST_SKIP() << "the device's memory is the host's: checks read it in place";
  constexpr int64_t n = 300000;  // 2.4 MB of int64
  const Tensor x = Tensor::arange(7).cast(DType::Float32);
  std::vector<double> values(n);
  for (int64_t i = 0; i < n; i++) values[static_cast<size_t>(i)] = static_cast<double>((i * 5) % 7);
  const Tensor idx = Tensor::from_vector(values, {n}, DType::Int64);
  x.gather(0, idx).realize();  // compiles the kernels
  reset_run_stats();
  const HostTensor got = x.gather(0, idx).to_host();
  EXPECT_EQ(run_stats().host_read_bytes, 16 + n * 4);  // the two ends, then the result
  for (int64_t i : {int64_t{0}, int64_t{1}, n - 1}) EXPECT_EQ(got.get(i), values[static_cast<size_t>(i)]);
  for (double bad : {7.0, -1.0}) {
    values[12345] = bad;
    const Tensor wrong = Tensor::from_vector(values, {n}, DType::Int64);
    try {
      x.gather(0, wrong);
      ADD_FAILURE() << "index " << bad << " was accepted";
    } catch (const IndexError &e) {
      EXPECT_NE(std::string(e.what()).find("index " + std::to_string(static_cast<int64_t>(bad)) + " is out of bounds"),
                std::string::npos)
          << e.what();
    }
    values[12345] = 0;
  }
}

}  // namespace
}  // namespace loom
