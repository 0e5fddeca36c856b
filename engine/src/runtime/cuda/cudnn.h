// The CUDA device's extern convolutions: cuDNN 9's cudnnConvolutionForward
// and cudnnConvolutionBackwardFilter (the legacy API, in libcudnn_cnn),
// loaded from libcudnn with dlopen on first use (no link-time dependency, no
// CUDA headers). A canonical GEMM of halves (schedule/gemm_shape.h) whose B
// is a convolution's windows read through their views from an NCHW image
// (its padding the views' mask) is
//   - that convolution, where its A is the filters [K, C, R, S] shared by
//     every image and its C is [N, K, Ho * Wo]: x, w -> y, NCHW in and out;
//   - its weight gradient, where it has no batch axes, its A is the output
//     gradient [N, K, Ho, Wo] read through its views as [K, N * Ho * Wo]
//     and its C is [K, C * R * S]: x, dy -> dw.
// A float32 C is the result in the operands' dtype, then widened by
// cudnnTransformTensor, exactly; the epilogue rounds it back. As torch's
// defaults for float16 and bfloat16 convolutions: the tensors in the
// operands' dtype, float32 compute, tensor-op math (TF32 never arises: no
// float32 operand), cross-correlation. The algorithm is the first
// deterministic one among those cuDNN's heuristics rank and support (else
// their first: torch's default allows the others, loom's replays are
// bitwise), its workspace allocated with the program.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "runtime/device.h"

namespace loom::runtime::cuda {

// cudnnConvolutionFwdAlgoPerf_t and cudnnConvolutionBwdFilterAlgoPerf_t
// (one layout).
struct CudnnAlgoPerf {
  int algo, status;
  float time;
  size_t memory;
  int determinism, math_type, reserved[3];
};

// The entry points loom calls, enums as ints, handles and descriptors as
// opaque pointers; each returns a cudnnStatus_t (0 = success).
struct CudnnApi {
  int (*create)(void **handle);
  int (*create_tensor)(void **desc);
  int (*set_tensor_4d)(void *desc, int type, int n, int c, int h, int w, int ns, int cs, int hs, int ws);  // ...Ex
  int (*destroy_tensor)(void *desc);
  int (*create_filter)(void **desc);
  int (*set_filter_4d)(void *desc, int type, int format, int k, int c, int h, int w);
  int (*destroy_filter)(void *desc);
  int (*create_conv)(void **desc);
  int (*set_conv_2d)(void *desc, int pad_h, int pad_w, int u, int v, int dil_h, int dil_w, int mode, int type);
  int (*set_conv_math)(void *desc, int math);
  int (*destroy_conv)(void *desc);
  int (*forward_algos)(void *handle, void *x, void *w, void *conv, void *y, int requested, int *returned,
                       CudnnAlgoPerf *perf);  // cudnnGetConvolutionForwardAlgorithm_v7
  int (*forward)(void *handle, const void *alpha, void *x_desc, const void *x, void *w_desc, const void *w,
                 void *conv, int algo, void *workspace, size_t workspace_bytes, const void *beta, void *y_desc,
                 void *y);  // cudnnConvolutionForward
  int (*filter_algos)(void *handle, void *x, void *dy, void *conv, void *dw, int requested, int *returned,
                      CudnnAlgoPerf *perf);  // cudnnGetConvolutionBackwardFilterAlgorithm_v7
  int (*backward_filter)(void *handle, const void *alpha, void *x_desc, const void *x, void *dy_desc, const void *dy,
                         void *conv, int algo, void *workspace, size_t workspace_bytes, const void *beta, void *dw_desc,
                         void *dw);  // cudnnConvolutionBackwardFilter
  int (*transform)(void *handle, const void *alpha, void *x_desc, const void *x, const void *beta, void *y_desc,
                   void *y);  // cudnnTransformTensor
  const char *(*status_string)(int);  // cudnnGetErrorString
};

// cuDNN's constants loom uses (cudnn_graph.h, cudnn_cnn.h).
constexpr int kCudnnFloat = 0, kCudnnHalf = 2, kCudnnBFloat16 = 9;
constexpr int kCudnnNchw = 0, kCudnnCrossCorrelation = 1, kCudnnTensorOpMath = 1, kCudnnDeterministic = 1;
constexpr int kCudnnBadParam = 2000, kCudnnNotSupported = 3000;

// libcudnn's entry points; nullptr when it cannot be loaded or lacks one (the
// reason is cudnn_missing()). Loaded once, thread-safe.
const CudnnApi *cudnn();
const std::string &cudnn_missing();

// What a canonical GEMM computes of a convolution (see above).
enum class CudnnPass { Forward, Filter };

// The convolution: x [n, c, h, w] at x_strides from element x_offset of
// slot x_slot. Forward: w [k, c, r, s] contiguous from w_offset of w_slot,
// y [n, k, out_h, out_w] contiguous in slot 0. Filter: dy [n, k, out_h,
// out_w] at dy_strides from dy_offset of dy_slot, dw [k, c, r, s]
// contiguous in slot 0.
struct CudnnConv {
  CudnnPass pass = CudnnPass::Forward;
  int n = 0, c = 0, h = 0, w = 0, k = 0, r = 0, s = 0;
  int pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1, out_h = 0, out_w = 0;
  int x_strides[4] = {}, dy_strides[4] = {};
  int64_t x_slot = 0, x_offset = 0, w_slot = 0, w_offset = 0, dy_slot = 0, dy_offset = 0;
  int type = kCudnnHalf;
  size_t bytes = 2;        // an element's
  bool float_out = false;  // the result widened to float32 into slot 0
};

// nullopt where `g` is no such convolution (see above), or cuDNN's
// descriptors cannot say it (a size or stride past 2^31 - 1, padding whose
// output size cuDNN's formula does not give).
std::optional<CudnnConv> cudnn_conv(const schedule::GemmShape &g);

// A program running it through `api` on `handle` (queued on the default
// stream), its workspace from `allocate`; a failing call raises loom::Error
// naming its status.
std::shared_ptr<const Program> cudnn_program(const CudnnConv &conv, const CudnnApi &api, void *handle,
                                             const std::function<std::shared_ptr<void>(size_t)> &allocate);

}  // namespace loom::runtime::cuda
