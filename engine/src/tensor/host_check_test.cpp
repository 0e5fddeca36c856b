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

}  // namespace
}  // namespace loom
