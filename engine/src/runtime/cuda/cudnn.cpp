#include "runtime/cuda/cudnn.h"

#include <dlfcn.h>

#include <array>
#include <climits>
#include <numeric>
#include <vector>

#include "loom/error.h"
#include "runtime/library.h"
#include "shape/view.h"

namespace loom::runtime::cuda {

namespace {

struct Loaded {
  CudnnApi api{};
  std::string missing;  // "" when usable
};

Loaded load() {
  Loaded l;
  std::string errors;
  void *lib = open_first({"libcudnn.so.9", "libcudnn.so", "/usr/local/cuda/lib64/libcudnn.so.9"}, errors);
  if (!lib) {
    l.missing = "CUDA: cuDNN (libcudnn.so.9) not found:" + errors;
    return l;
  }
  Symbols need(lib, "CUDA: libcudnn", " (cuDNN 9 is needed)");
  CudnnApi &a = l.api;
  need(a.create, "cudnnCreate");
  need(a.create_tensor, "cudnnCreateTensorDescriptor");
  need(a.set_tensor_4d, "cudnnSetTensor4dDescriptorEx");
  need(a.destroy_tensor, "cudnnDestroyTensorDescriptor");
  need(a.create_filter, "cudnnCreateFilterDescriptor");
  need(a.set_filter_4d, "cudnnSetFilter4dDescriptor");
  need(a.destroy_filter, "cudnnDestroyFilterDescriptor");
  need(a.create_conv, "cudnnCreateConvolutionDescriptor");
  need(a.set_conv_2d, "cudnnSetConvolution2dDescriptor");
  need(a.set_conv_math, "cudnnSetConvolutionMathType");
  need(a.destroy_conv, "cudnnDestroyConvolutionDescriptor");
  need(a.forward_algos, "cudnnGetConvolutionForwardAlgorithm_v7");
  need(a.forward, "cudnnConvolutionForward");
  need(a.filter_algos, "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
  need(a.backward_filter, "cudnnConvolutionBackwardFilter");
  need(a.transform, "cudnnTransformTensor");
  need(a.status_string, "cudnnGetErrorString");
  l.missing = need.missing;
  return l;
}

const Loaded &loaded() {
  static const Loaded l = load();
  return l;
}

bool fits(int64_t v) { return v >= 0 && v <= INT_MAX; }

// The image's strides along its height and width from the windows' view
// straight over the buffer (no padding): the gcd of the tap's and the
// output's strides along each (a common factor of dilation and stride then
// reads every second element of a narrower image: the same sums); 0 where
// neither axis moves (that extent 1).
int64_t image_stride(int64_t taps, int64_t tap_stride, int64_t outs, int64_t out_stride) {
  return std::gcd(taps > 1 ? tap_stride : 0, outs > 1 ? out_stride : 0);
}

// The windows over the image as they read it: x's strides, its offset, the
// padding, and the taps' and outputs' steps in image elements. False where
// the views are no convolution cuDNN takes.
bool read_image(const shape::ViewStack &views, const shape::View &win, CudnnConv &c, int64_t strides[4]) {
  const shape::Strides &ws = win.strides;
  const int64_t R = c.r, S = c.s, Ho = c.out_h, Wo = c.out_w;
  int64_t dil_h = 1, dil_w = 1, st_h = 1, st_w = 1, offset = win.offset, h = 0, w = 0;
  if (views.size() == 2) {  // the windows straight over x
    const int64_t sh = image_stride(R, ws[2], Ho, ws[4]), sw = image_stride(S, ws[3], Wo, ws[5]);
    if (sh <= 0 || sw <= 0) return false;
    strides[0] = ws[0], strides[1] = ws[1], strides[2] = sh, strides[3] = sw;
    dil_h = R > 1 ? ws[2] / sh : 1, st_h = Ho > 1 ? ws[4] / sh : 1;
    dil_w = S > 1 ? ws[3] / sw : 1, st_w = Wo > 1 ? ws[5] / sw : 1;
    h = (Ho - 1) * st_h + (R - 1) * dil_h + 1, w = (Wo - 1) * st_w + (S - 1) * dil_w + 1;
  } else {  // the windows over the padded image, row-major; its view over x, zero where masked
    const shape::View &pad = views[0];
    if (pad.shape.size() != 4 || pad.shape[0] != c.n || pad.shape[1] != c.c || win.offset != 0) return false;
    const int64_t hp = pad.shape[2], wp = pad.shape[3];
    if ((c.n > 1 && ws[0] != c.c * hp * wp) || (c.c > 1 && ws[1] != hp * wp)) return false;
    if ((R > 1 && ws[2] % wp) || (Ho > 1 && ws[4] % wp)) return false;
    dil_h = R > 1 ? ws[2] / wp : 1, st_h = Ho > 1 ? ws[4] / wp : 1;
    dil_w = S > 1 ? ws[3] : 1, st_w = Wo > 1 ? ws[5] : 1;
    int64_t lo[4] = {0, 0, 0, 0}, hi[4] = {c.n, c.c, hp, wp};
    if (pad.mask)
      for (size_t d = 0; d < 4; d++) lo[d] = (*pad.mask)[d].first, hi[d] = (*pad.mask)[d].second;
    if (lo[0] != 0 || hi[0] != c.n || lo[1] != 0 || hi[1] != c.c) return false;
    c.pad_h = static_cast<int>(lo[2]), c.pad_w = static_cast<int>(lo[3]);
    h = hi[2] - lo[2], w = hi[3] - lo[3];
    for (size_t d = 0; d < 4; d++) strides[d] = pad.strides[d];
    offset = pad.offset + lo[2] * pad.strides[2] + lo[3] * pad.strides[3];
    // cuDNN pads both sides alike: its output size must be the views'.
    if ((h + 2 * c.pad_h - dil_h * (R - 1) - 1) / st_h + 1 != Ho || (w + 2 * c.pad_w - dil_w * (S - 1) - 1) / st_w + 1 != Wo)
      return false;
  }
  for (int64_t v : {dil_h, dil_w, st_h, st_w, h, w})
    if (!fits(v) || v == 0) return false;
  if (!fits(offset)) return false;
  c.dil_h = static_cast<int>(dil_h), c.dil_w = static_cast<int>(dil_w);
  c.stride_h = static_cast<int>(st_h), c.stride_w = static_cast<int>(st_w);
  c.h = static_cast<int>(h), c.w = static_cast<int>(w);
  c.x_offset = offset;
  return true;
}

// The first deterministic algorithm among those cuDNN's heuristics ranked
// and support, else the first they support; -1 where none.
int chosen(const CudnnAlgoPerf *perf, int returned) {
  int first = -1;
  for (int i = 0; i < returned; i++) {
    if (perf[i].status != 0) continue;
    if (perf[i].determinism == kCudnnDeterministic) return i;
    if (first < 0) first = i;
  }
  return first;
}

class CudnnProgram : public Program {
 public:
  CudnnProgram(const CudnnConv &c, const CudnnApi &api, void *handle,
               const std::function<std::shared_ptr<void>(size_t)> &allocate)
      : c_(c), api_(api), handle_(handle) {
    try {
      describe_to_cudnn(allocate);
    } catch (...) {  // no destructor runs: the descriptors made so far go here
      release();
      throw;
    }
  }
  ~CudnnProgram() override { release(); }

 private:
  // The descriptors, the algorithm and its workspace. y_ is the forward's
  // output or the filter pass's dy, w_ the forward's filters or the filter
  // pass's dw; out_ the result as a tensor in the operands' dtype and wide_
  // in float32, for a float32 C.
  void describe_to_cudnn(const std::function<std::shared_ptr<void>(size_t)> &allocate) {
    const CudnnConv &c = c_;
    const bool forward = c.pass == CudnnPass::Forward;
    for (void **t : {&x_, &y_, &out_, &wide_}) check(api_.create_tensor(t), "cudnnCreateTensorDescriptor");
    check(api_.create_filter(&w_), "cudnnCreateFilterDescriptor");
    check(api_.create_conv(&conv_), "cudnnCreateConvolutionDescriptor");
    const int *xs = c.x_strides, *dys = c.dy_strides, hw = c.out_h * c.out_w;
    set_tensor(x_, c.type, {c.n, c.c, c.h, c.w}, {xs[0], xs[1], xs[2], xs[3]});
    if (forward) {
      set_tensor(y_, c.type, {c.n, c.k, c.out_h, c.out_w}, {c.k * hw, hw, c.out_w, 1});
    } else {
      set_tensor(y_, c.type, {c.n, c.k, c.out_h, c.out_w}, {dys[0], dys[1], dys[2], dys[3]});
    }
    if (c.float_out) {  // the result in the operands' dtype, row-major
      const std::array<int, 4> dims = forward ? std::array<int, 4>{c.n, c.k, c.out_h, c.out_w} : std::array<int, 4>{c.k, c.c, c.r, c.s};
      const std::array<int, 4> strides = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
      set_tensor(out_, c.type, dims, strides);
      set_tensor(wide_, kCudnnFloat, dims, strides);
      narrow_ = allocate(static_cast<size_t>(dims[0]) * static_cast<size_t>(strides[0]) * c.bytes);
    }
    check(api_.set_filter_4d(w_, c.type, kCudnnNchw, c.k, c.c, c.r, c.s), "cudnnSetFilter4dDescriptor");
    check(api_.set_conv_2d(conv_, c.pad_h, c.pad_w, c.stride_h, c.stride_w, c.dil_h, c.dil_w, kCudnnCrossCorrelation,
                           kCudnnFloat),
          "cudnnSetConvolution2dDescriptor");
    check(api_.set_conv_math(conv_, kCudnnTensorOpMath), "cudnnSetConvolutionMathType");
    CudnnAlgoPerf perf[8] = {};
    int returned = 0;
    if (forward) {
      check(api_.forward_algos(handle_, x_, w_, conv_, y_, 8, &returned, perf), "cudnnGetConvolutionForwardAlgorithm_v7");
    } else {
      check(api_.filter_algos(handle_, x_, y_, conv_, w_, 8, &returned, perf),
            "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
    }
    const int i = chosen(perf, returned);
    if (i < 0) throw Error(std::string("CUDA: cuDNN has no ") + (forward ? "forward" : "backward filter") + " algorithm for this convolution");
    algo_ = perf[i].algo;
    workspace_bytes_ = perf[i].memory;
    if (workspace_bytes_) workspace_ = allocate(workspace_bytes_);
  }
  void set_tensor(void *t, int type, const std::array<int, 4> &d, const std::array<int, 4> &st) const {
    check(api_.set_tensor_4d(t, type, d[0], d[1], d[2], d[3], st[0], st[1], st[2], st[3]), "cudnnSetTensor4dDescriptorEx");
  }
  void release() {
    for (void *t : {x_, y_, out_, wide_})
      if (t) api_.destroy_tensor(t);
    if (w_) api_.destroy_filter(w_);
    if (conv_) api_.destroy_conv(conv_);
  }

 public:
  const char *library() const override { return c_.pass == CudnnPass::Forward ? "cudnn conv" : "cudnn wgrad"; }
  std::string describe(void **) const override {
    auto dims = [](std::initializer_list<int> v) {
      std::string s;
      for (int x : v) s += (s.empty() ? "" : "x") + std::to_string(x);
      return s;
    };
    return "x " + dims({c_.n, c_.c, c_.h, c_.w}) + " w " + dims({c_.k, c_.r, c_.s}) + " pad " +
           std::to_string(c_.pad_h) + "," + std::to_string(c_.pad_w) + " stride " + std::to_string(c_.stride_h) + "," +
           std::to_string(c_.stride_w) + " dilation " + std::to_string(c_.dil_h) + "," + std::to_string(c_.dil_w) +
           " algo " + std::to_string(algo_) + " workspace " + std::to_string(workspace_bytes_);
  }

  void launch(void **bufs, int64_t, bool) const override {
    const float alpha = 1.0f, beta = 0.0f;  // float32 compute: float scalars
    auto at = [&](int64_t slot, int64_t offset) {
      return static_cast<const char *>(bufs[slot]) + offset * static_cast<int64_t>(c_.bytes);
    };
    void *out = c_.float_out ? narrow_.get() : bufs[0];
    const void *x = at(c_.x_slot, c_.x_offset);
    if (c_.pass == CudnnPass::Forward) {
      check(api_.forward(handle_, &alpha, x_, x, w_, at(c_.w_slot, c_.w_offset), conv_, algo_, workspace_.get(),
                         workspace_bytes_, &beta, y_, out),
            "cudnnConvolutionForward");
    } else {
      check(api_.backward_filter(handle_, &alpha, x_, x, y_, at(c_.dy_slot, c_.dy_offset), conv_, algo_,
                                 workspace_.get(), workspace_bytes_, &beta, w_, out),
            "cudnnConvolutionBackwardFilter");
    }
    if (c_.float_out) check(api_.transform(handle_, &alpha, out_, out, &beta, wide_, bufs[0]), "cudnnTransformTensor");
  }

 private:
  void check(int status, const char *what) const {
    if (status == 0) return;
    const char *s = api_.status_string ? api_.status_string(status) : nullptr;
    throw Error(std::string("CUDA: ") + what + " failed: " + (s ? s : "status") + " (" + std::to_string(status) + ")");
  }

  CudnnConv c_;
  const CudnnApi &api_;
  void *handle_;
  void *x_ = nullptr, *y_ = nullptr, *out_ = nullptr, *wide_ = nullptr, *w_ = nullptr, *conv_ = nullptr;
  int algo_ = 0;
  size_t workspace_bytes_ = 0;
  std::shared_ptr<void> workspace_, narrow_;  // narrow_: the result before it is widened (float_out)
};

// The windows (`win`, their axes in the forward's order N, C, R, S, Ho,
// Wo, then axes of size 1) over the image as B's views read it: the sizes
// and the image into `c`. False where cuDNN's descriptors cannot say it.
bool read_windows(const shape::ViewStack &views, const shape::View &win, CudnnConv &c) {
  const Shape &ws = win.shape;
  if (win.mask || ws.size() < 6) return false;
  for (size_t d = 6; d < ws.size(); d++)
    if (ws[d] != 1) return false;
  for (int64_t v : {ws[0], ws[1], ws[2], ws[3], ws[4], ws[5]})
    if (!fits(v) || v == 0) return false;
  c.n = static_cast<int>(ws[0]), c.c = static_cast<int>(ws[1]), c.r = static_cast<int>(ws[2]);
  c.s = static_cast<int>(ws[3]), c.out_h = static_cast<int>(ws[4]), c.out_w = static_cast<int>(ws[5]);
  int64_t strides[4];
  if (!read_image(views, win, c, strides)) return false;
  for (int d = 0; d < 4; d++) {
    if (!fits(strides[d])) return false;
    c.x_strides[d] = static_cast<int>(strides[d]);
  }
  return true;
}

// Whether `v` is an unmasked view at offset 0 of `shape` and `strides`.
bool plain(const shape::View &v, const Shape &shape, const shape::Strides &strides) {
  return !v.mask && v.offset == 0 && v.shape == shape && v.strides == strides;
}

// A convolution's forward pass: B's top view merges the windows' [N, C, R,
// S, Ho, Wo] row-major into [N, m, k, n], m broadcast; A is the filters
// [K, C * R * S], contiguous, the same for every image.
std::optional<CudnnConv> forward_pass(const schedule::GemmShape &g) {
  const shape::ViewStack &views = g.b.view->views;
  if (g.batch.size() != 1 || (views.size() != 2 && views.size() != 3)) return std::nullopt;
  const shape::View &top = views.back(), &win = views[views.size() - 2];
  const int64_t n = g.batch[0];
  if (!plain(top, {n, g.m, g.k, g.n}, {g.k * g.n, 0, g.n, 1}) || win.shape.size() < 6 || win.shape[0] != n ||
      win.shape[1] * win.shape[2] * win.shape[3] != g.k || win.shape[4] * win.shape[5] != g.n)
    return std::nullopt;
  if (g.a.row_stride != g.k || g.a.col_stride != 1 || g.a.batch_strides.at(0) != 0 || g.a.offset < 0 ||
      !fits(g.m) || !fits(n * g.m * g.n))
    return std::nullopt;
  CudnnConv c;
  c.k = static_cast<int>(g.m);
  if (!read_windows(views, win, c)) return std::nullopt;
  c.w_slot = g.a.slot, c.w_offset = g.a.offset;
  return c;
}

// A convolution's weight gradient: no batch axes; B's top view merges the
// windows' [N, Ho, Wo, C, R, S] row-major into [m, k, n], m broadcast; A's
// merges the output gradient's [K, N, Ho, Wo] (a view of its buffer) into
// [m, k, n], n broadcast.
std::optional<CudnnConv> filter_pass(const schedule::GemmShape &g) {
  const shape::ViewStack &views = g.b.view->views, &dy_views = g.a.view->views;
  if (!g.batch.empty() || (views.size() != 2 && views.size() != 3) || dy_views.size() != 2) return std::nullopt;
  const shape::View &top = views.back(), &win = views[views.size() - 2], &dy = dy_views[0];
  if (!plain(top, {g.m, g.k, g.n}, {0, g.n, 1}) || !plain(dy_views[1], {g.m, g.k, g.n}, {g.k, 1, 0}) ||
      win.shape.size() < 6 || dy.mask || dy.shape.size() < 4)
    return std::nullopt;
  std::vector<int64_t> order = {0, 3, 4, 5, 1, 2};  // [N, Ho, Wo, C, R, S] in the forward's order
  for (size_t d = 6; d < win.shape.size(); d++) order.push_back(static_cast<int64_t>(d));
  const shape::View fwd = win.permute(order);
  const Shape &ws = fwd.shape;
  if (ws[0] * ws[4] * ws[5] != g.k || ws[1] * ws[2] * ws[3] != g.n || dy.shape[0] != g.m || dy.shape[1] != ws[0] ||
      dy.shape[2] != ws[4] || dy.shape[3] != ws[5] || !fits(g.m) || !fits(g.m * g.n) || !fits(dy.offset) || dy.offset < 0)
    return std::nullopt;
  for (size_t d = 4; d < dy.shape.size(); d++)
    if (dy.shape[d] != 1) return std::nullopt;
  CudnnConv c;
  c.pass = CudnnPass::Filter;
  c.k = static_cast<int>(g.m);
  if (!read_windows(views, fwd, c)) return std::nullopt;
  // dy [N, K, Ho, Wo]: its view's axes 1, 0, 2, 3; an axis of one element
  // any positive stride.
  const int64_t sizes[4] = {dy.shape[1], dy.shape[0], dy.shape[2], dy.shape[3]};
  const int64_t strides[4] = {dy.strides[1], dy.strides[0], dy.strides[2], dy.strides[3]};
  for (int d = 0; d < 4; d++) {
    const int64_t st = sizes[d] == 1 ? 1 : strides[d];
    if (st <= 0 || !fits(st)) return std::nullopt;
    c.dy_strides[d] = static_cast<int>(st);
  }
  c.dy_slot = g.a.slot, c.dy_offset = dy.offset;
  return c;
}

}  // namespace

const CudnnApi *cudnn() { return loaded().missing.empty() ? &loaded().api : nullptr; }
const std::string &cudnn_missing() { return loaded().missing; }

std::optional<CudnnConv> cudnn_conv(const schedule::GemmShape &g) {
  if (!g.b.view || (g.out != g.in && g.out != DType::Float32) || (g.in != DType::Float16 && g.in != DType::BFloat16))
    return std::nullopt;
  std::optional<CudnnConv> c = g.a.view ? filter_pass(g) : forward_pass(g);
  if (!c) return std::nullopt;
  c->x_slot = g.b.slot;
  c->type = g.in == DType::Float16 ? kCudnnHalf : kCudnnBFloat16;
  c->float_out = g.out == DType::Float32;
  return c;
}

std::shared_ptr<const Program> cudnn_program(const CudnnConv &conv, const CudnnApi &api, void *handle,
                                             const std::function<std::shared_ptr<void>(size_t)> &allocate) {
  return std::make_shared<CudnnProgram>(conv, api, handle, allocate);
}

}  // namespace loom::runtime::cuda
