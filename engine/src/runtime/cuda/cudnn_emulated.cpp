// cuDNN's legacy convolution calls on the CPU, as its documentation defines
// them (NCHW descriptors with explicit strides, a filter [K, C, R, S], zero
// padding on both sides, cross-correlation, float32 accumulation), so the
// emulator runs the CUDA device's extern convolutions unchanged: the
// descriptors loom sets are what the result depends on.
#include <cstdint>
#include <memory>

#include "runtime/cuda/cudnn.h"
#include "runtime/cuda/emulated_elements.h"
#include "runtime/cuda/emulator.h"

namespace loom::runtime::cuda {

namespace {

int g_handle;  // what the emulated cudnnCreate hands out

struct Tensor4d {
  int type = -1, n = 0, c = 0, h = 0, w = 0, strides[4] = {};
};
struct Filter {
  int type = -1, k = 0, c = 0, r = 0, s = 0;
};
struct Conv {
  int pad_h = 0, pad_w = 0, u = 0, v = 0, dil_h = 0, dil_w = 0;
  bool set = false;
};

bool supported(int t) { return t == kCudnnHalf || t == kCudnnBFloat16; }

DType dtype(int type) { return type == kCudnnFloat ? DType::Float32 : type == kCudnnHalf ? DType::Float16 : DType::BFloat16; }
float read(const void *base, int type, int64_t i) { return load_float(base, dtype(type), i); }

template <typename T>
int create(void **desc) {
  *desc = new T();
  return 0;
}
template <typename T>
int destroy(void *desc) {
  delete static_cast<T *>(desc);
  return 0;
}

int create_handle(void **handle) {
  *handle = &g_handle;
  return 0;
}

int set_tensor(void *desc, int type, int n, int c, int h, int w, int ns, int cs, int hs, int ws) {
  if (n <= 0 || c <= 0 || h <= 0 || w <= 0 || ns <= 0 || cs <= 0 || hs <= 0 || ws <= 0) return kCudnnBadParam;
  if (!supported(type) && type != kCudnnFloat) return kCudnnNotSupported;
  *static_cast<Tensor4d *>(desc) = {type, n, c, h, w, {ns, cs, hs, ws}};
  return 0;
}

int set_filter(void *desc, int type, int format, int k, int c, int r, int s) {
  if (format != kCudnnNchw || k <= 0 || c <= 0 || r <= 0 || s <= 0) return kCudnnBadParam;
  if (!supported(type)) return kCudnnNotSupported;
  *static_cast<Filter *>(desc) = {type, k, c, r, s};
  return 0;
}

int set_conv(void *desc, int pad_h, int pad_w, int u, int v, int dil_h, int dil_w, int mode, int type) {
  if (pad_h < 0 || pad_w < 0 || u <= 0 || v <= 0 || dil_h <= 0 || dil_w <= 0 || mode != kCudnnCrossCorrelation)
    return kCudnnBadParam;
  if (type != kCudnnFloat) return kCudnnNotSupported;
  *static_cast<Conv *>(desc) = {pad_h, pad_w, u, v, dil_h, dil_w, true};
  return 0;
}

int set_math(void *desc, int math) { return desc && (math == 0 || math == kCudnnTensorOpMath) ? 0 : kCudnnBadParam; }

// The descriptors agree: one dtype, x's channels the filter's, y's size the
// convolution's output size.
bool consistent(const Tensor4d &x, const Filter &w, const Conv &c, const Tensor4d &y) {
  return c.set && x.type == w.type && y.type == x.type && x.c == w.c && y.n == x.n && y.c == w.k &&
         y.h == (x.h + 2 * c.pad_h - c.dil_h * (w.r - 1) - 1) / c.u + 1 &&
         y.w == (x.w + 2 * c.pad_w - c.dil_w * (w.s - 1) - 1) / c.v + 1;
}

// One algorithm for either pass: ALGO_0, no workspace, deterministic.
int algos(void *handle, void *x, void *w, void *conv, void *y, int requested, int *returned, CudnnAlgoPerf *perf) {
  if (handle != &g_handle || requested < 1) return kCudnnBadParam;
  if (!consistent(*static_cast<Tensor4d *>(x), *static_cast<Filter *>(w), *static_cast<Conv *>(conv),
                  *static_cast<Tensor4d *>(y)))
    return kCudnnBadParam;
  perf[0] = CudnnAlgoPerf{0, 0, 0.0f, 0, kCudnnDeterministic, kCudnnTensorOpMath, {}};
  *returned = 1;
  return 0;
}
int filter_algos(void *handle, void *x, void *dy, void *conv, void *dw, int requested, int *returned,
                 CudnnAlgoPerf *perf) {
  return algos(handle, x, dw, conv, dy, requested, returned, perf);
}

// Element (n, c, iy, ix) of a tensor: its flat index, or -1 in the padding.
int64_t at(const Tensor4d &t, int64_t n, int64_t c, int64_t y, int64_t x) {
  if (y < 0 || y >= t.h || x < 0 || x >= t.w) return -1;
  return n * t.strides[0] + c * t.strides[1] + y * t.strides[2] + x * t.strides[3];
}

int forward(void *handle, const void *alpha, void *x_desc, const void *x, void *w_desc, const void *w, void *conv_desc,
            int algo, void *, size_t, const void *beta, void *y_desc, void *y) {
  const Tensor4d &xd = *static_cast<Tensor4d *>(x_desc), &yd = *static_cast<Tensor4d *>(y_desc);
  const Filter &wd = *static_cast<Filter *>(w_desc);
  const Conv &c = *static_cast<Conv *>(conv_desc);
  if (handle != &g_handle || algo != 0 || !consistent(xd, wd, c, yd)) return kCudnnBadParam;
  const float al = *static_cast<const float *>(alpha), be = *static_cast<const float *>(beta);
  for (int64_t n = 0; n < yd.n; n++)
    for (int64_t k = 0; k < yd.c; k++)
      for (int64_t oy = 0; oy < yd.h; oy++)
        for (int64_t ox = 0; ox < yd.w; ox++) {
          float sum = 0;
          for (int64_t ch = 0; ch < wd.c; ch++)
            for (int64_t r = 0; r < wd.r; r++)
              for (int64_t s = 0; s < wd.s; s++) {
                const int64_t xi = at(xd, n, ch, oy * c.u - c.pad_h + r * c.dil_h, ox * c.v - c.pad_w + s * c.dil_w);
                if (xi >= 0) sum += read(x, xd.type, xi) * read(w, wd.type, ((k * wd.c + ch) * wd.r + r) * wd.s + s);
              }
          const int64_t yi = at(yd, n, k, oy, ox);
          store_blended(y, dtype(yd.type), yi, al * sum, be);
        }
  return 0;
}

// dw[k, c, r, s] = the sum over n, oy, ox of dy[n, k, oy, ox] times the
// input element the forward read there.
int backward_filter(void *handle, const void *alpha, void *x_desc, const void *x, void *dy_desc, const void *dy,
                    void *conv_desc, int algo, void *, size_t, const void *beta, void *dw_desc, void *dw) {
  const Tensor4d &xd = *static_cast<Tensor4d *>(x_desc), &yd = *static_cast<Tensor4d *>(dy_desc);
  const Filter &wd = *static_cast<Filter *>(dw_desc);
  const Conv &c = *static_cast<Conv *>(conv_desc);
  if (handle != &g_handle || algo != 0 || !consistent(xd, wd, c, yd)) return kCudnnBadParam;
  const float al = *static_cast<const float *>(alpha), be = *static_cast<const float *>(beta);
  for (int64_t k = 0; k < wd.k; k++)
    for (int64_t ch = 0; ch < wd.c; ch++)
      for (int64_t r = 0; r < wd.r; r++)
        for (int64_t s = 0; s < wd.s; s++) {
          float sum = 0;
          for (int64_t n = 0; n < yd.n; n++)
            for (int64_t oy = 0; oy < yd.h; oy++)
              for (int64_t ox = 0; ox < yd.w; ox++) {
                const int64_t xi = at(xd, n, ch, oy * c.u - c.pad_h + r * c.dil_h, ox * c.v - c.pad_w + s * c.dil_w);
                if (xi >= 0) sum += read(x, xd.type, xi) * read(dy, yd.type, at(yd, n, k, oy, ox));
              }
          const int64_t wi = ((k * wd.c + ch) * wd.r + r) * wd.s + s;
          store_blended(dw, dtype(wd.type), wi, al * sum, be);
        }
  return 0;
}

// y = alpha x + beta y, element by element, each in its descriptor's dtype and strides.
int transform(void *handle, const void *alpha, void *x_desc, const void *x, const void *beta, void *y_desc, void *y) {
  const Tensor4d &xd = *static_cast<Tensor4d *>(x_desc), &yd = *static_cast<Tensor4d *>(y_desc);
  if (handle != &g_handle || xd.n != yd.n || xd.c != yd.c || xd.h != yd.h || xd.w != yd.w) return kCudnnBadParam;
  const float al = *static_cast<const float *>(alpha), be = *static_cast<const float *>(beta);
  for (int64_t n = 0; n < xd.n; n++)
    for (int64_t c = 0; c < xd.c; c++)
      for (int64_t h = 0; h < xd.h; h++)
        for (int64_t w = 0; w < xd.w; w++) {
          const int64_t xi = n * xd.strides[0] + c * xd.strides[1] + h * xd.strides[2] + w * xd.strides[3];
          const int64_t yi = n * yd.strides[0] + c * yd.strides[1] + h * yd.strides[2] + w * yd.strides[3];
          const float v = al * read(x, xd.type, xi);
          store_blended(y, dtype(yd.type), yi, v, be);
        }
  return 0;
}

const char *status_string(int status) {
  switch (status) {
    case 0: return "CUDNN_STATUS_SUCCESS";
    case kCudnnBadParam: return "CUDNN_STATUS_BAD_PARAM";
    case kCudnnNotSupported: return "CUDNN_STATUS_NOT_SUPPORTED";
    default: return "CUDNN_STATUS_UNKNOWN";
  }
}

}  // namespace

const CudnnApi &emulated_cudnn() {
  static const CudnnApi api{create_handle, create<Tensor4d>, set_tensor,   destroy<Tensor4d>, create<Filter>,
                            set_filter,    destroy<Filter>,  create<Conv>, set_conv,          set_math,
                            destroy<Conv>, algos,            forward,      filter_algos,      backward_filter,
                            transform,     status_string};
  return api;
}

}  // namespace loom::runtime::cuda
