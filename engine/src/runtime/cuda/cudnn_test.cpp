// The CUDA device's extern convolution (runtime/cuda/cudnn.h): which GEMMs it
// takes, its errors, and libcudnn's entry points where the toolkit has them.
// The calls' values (forward and backward filter):
// HalfConv.BesideCudnnAConvolutionIsOneCudnnCall on the emulator's cuDNN.
#include "runtime/cuda/cudnn.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "loom/error.h"
#include "runtime/cuda/emulator.h"

namespace loom::runtime::cuda {
namespace {

TEST(CudnnConv, OnlyHalfGemmsOfGatheredWindowsAreConvolutions) {
  schedule::GemmShape g;
  g.batch = {2};
  g.m = 5, g.n = 81, g.k = 27;
  g.in = g.out = DType::Float16;
  g.a.row_stride = 27, g.a.col_stride = 1, g.a.batch_strides = {0};
  g.b.row_stride = 81, g.b.col_stride = 1, g.b.batch_strides = {2187};
  EXPECT_FALSE(cudnn_conv(g));  // B a strided matrix: cuBLAS's
}

TEST(CudnnConv, AFailingCallIsAnErrorNamingCudnnsStatus) {
  const CudnnApi &api = emulated_cudnn();
  void *handle = nullptr;
  ASSERT_EQ(api.create(&handle), 0);
  for (CudnnPass pass : {CudnnPass::Forward, CudnnPass::Filter}) {
    CudnnConv c;
    c.pass = pass;
    c.n = 1, c.c = 2, c.h = 5, c.w = 5, c.k = 3, c.r = 3, c.s = 3, c.out_h = 4, c.out_w = 3;  // out_h not 3
    c.x_strides[0] = 50, c.x_strides[1] = 25, c.x_strides[2] = 5, c.x_strides[3] = 1;
    c.dy_strides[0] = 36, c.dy_strides[1] = 12, c.dy_strides[2] = 3, c.dy_strides[3] = 1;
    const char *call = pass == CudnnPass::Forward ? "cudnnGetConvolutionForwardAlgorithm_v7"
                                                  : "cudnnGetConvolutionBackwardFilterAlgorithm_v7";
    try {
      cudnn_program(c, api, handle, [](size_t) { return std::shared_ptr<void>(); });
      ADD_FAILURE() << "descriptors of another output size were accepted";
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(std::string(call) + " failed: CUDNN_STATUS_BAD_PARAM"), std::string::npos)
          << e.what();
    }
  }
}

TEST(CudnnConv, LibcudnnHasEveryEntryPointLoomCalls) {
  if (!std::filesystem::exists("/usr/local/cuda/lib64/libcudnn.so.9") && !cudnn()) GTEST_SKIP() << cudnn_missing();
  EXPECT_EQ(cudnn_missing(), "");
  ASSERT_NE(cudnn(), nullptr);
  EXPECT_NE(cudnn()->forward, nullptr);
  EXPECT_NE(cudnn()->backward_filter, nullptr);
}

}  // namespace
}  // namespace loom::runtime::cuda
