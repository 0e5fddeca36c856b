// Tensor: creation, properties and realization.
#include "loom/tensor.h"

#include <cmath>
#include <cstring>
#include <sstream>

#include <unistd.h>

#include "engine/capture.h"
#include "engine/realize.h"
#include "loom/backends.h"
#include "tensor/host_check.h"
#include "tensor/ops_util.h"
#include "tensor/pending.h"
#include "tensor/record.h"

namespace loom {

using namespace tensor;

// One interned 0-d zero for every default-constructed handle (handles are
// made often: each recorded op wraps its result in one).
Tensor::Tensor() : Tensor([] {
  static const UOpRef zero = const_tensor(0, DType::Float32, {});
  return zero;
}()) {}
Tensor::Tensor(UOpRef u) : impl_(TensorImpl::make()) { impl_->uop = std::move(u); }

const UOpRef &Tensor::uop() const { return impl_->uop; }

namespace tensor {
Tensor make_tensor(UOpRef u) { return Tensor(in_iterator_layout(std::move(u))); }
}  // namespace tensor

namespace {
void check_shape(const Shape &shape, const char *op) {
  for (auto d : shape)
    if (d < 0) throw Error(std::string(op) + ": negative dimension in shape " + shape_str(shape));
}
}  // namespace

Tensor Tensor::empty(const Shape &shape, DType dtype) {
  check_shape(shape, "empty");
  return Tensor(buffer_view(uop::Buffer::create(dtype, shape::prod(shape)), shape));
}
Tensor Tensor::zeros(const Shape &shape, DType dtype) { return full(shape, 0, dtype); }
Tensor Tensor::ones(const Shape &shape, DType dtype) { return full(shape, 1, dtype); }

Tensor Tensor::full(const Shape &shape, Scalar value, std::optional<DType> dtype) {
  check_shape(shape, "full");
  DType dt = dtype ? *dtype
                   : value.kind == Scalar::Kind::Bool ? DType::Bool
                   : value.kind == Scalar::Kind::Int  ? DType::Int64
                                                      : DType::Float32;
  if (is_float(dt) || dt == DType::Bool) return Tensor(uop::scalar_tensor(value.to_double(), dt, shape));
  if (value.kind == Scalar::Kind::Float && !(value.f > -9223372036854775808.0 && value.f < 9223372036854775808.0))
    throw Error("full: value cannot be converted to type " + std::string(dtype_name(dt)) + " without overflow: " +
                value.str());
  return Tensor(const_int_tensor(value.kind == Scalar::Kind::Float ? static_cast<int64_t>(value.f) : value.i, dt, shape));
}

namespace {

// A short arange (a pool's tie-break scores, a small index table) is computed
// where it is read rather than uploaded: on a GPU every upload from pageable
// memory waits for the queued work. Where the host's double arithmetic and its
// conversion are a kernel's too (values within 2^53, a dtype converted from
// double as C converts): the values are bit for bit the uploaded ones.
constexpr int64_t kInlineArange = 16;
bool computes_in_place(int64_t n, double first, double bound, DType dt) {
  const double exact = 9007199254740992.0;  // 2^53
  return n > 0 && n <= kInlineArange && std::abs(first) < exact && std::abs(bound) < exact &&
         (dt == DType::Int64 || dt == DType::Float32 || dt == DType::Float64);
}

// start + i * step for i in [0, n), as the host computes it: i is the sum of
// n - 1 masked ones (the one for m reads 1 at positions >= m), so it needs no
// buffer; start and step are runtime scalars, never folded (0 + -0.0 is +0.0).
UOpRef inline_arange(int64_t n, double start, double step, DType dt) {
  UOpRef index = n == 1 ? uop::const_int_tensor(0, DType::Int64, {1}) : nullptr;
  for (int64_t m = 1; m < n; m++) {
    const UOpRef ones = uop::const_int_tensor(1, DType::Int64, {n - m});
    const UOpRef from_m = uop::view(ones, uop::tracker_of(ones).pad({{m, 0}}));
    index = index ? uop::alu(Op::Add, index, from_m) : from_m;
  }
  const UOpRef i = uop::UOp::make(Op::Cast, DType::Float64, {index});
  const UOpRef value = uop::alu(Op::Add, uop::param_tensor(start, DType::Float64, {n}),
                                uop::alu(Op::Mul, i, uop::param_tensor(step, DType::Float64, {n})));
  return uop::UOp::make(Op::Cast, dt, {value});
}

}  // namespace

Tensor Tensor::arange(Scalar end, std::optional<DType> dtype) { return arange(0, end, 1, dtype); }

Tensor Tensor::arange(Scalar start, Scalar end, Scalar step, std::optional<DType> dtype) {
  bool all_int = start.kind != Scalar::Kind::Float && end.kind != Scalar::Kind::Float && step.kind != Scalar::Kind::Float;
  DType dt = dtype ? *dtype : all_int ? DType::Int64 : DType::Float32;
  double s = start.to_double(), e = end.to_double(), st = step.to_double();
  if (st == 0) throw Error("arange: step must be nonzero");
  if (dt == DType::Bool) throw TypeError("arange: not implemented for dtype bool");
  if ((st > 0 && e < s) || (st < 0 && e > s))
    throw Error("arange: upper bound and larger bound inconsistent with step sign (start=" + start.str() +
                ", end=" + end.str() + ", step=" + step.str() + ")");
  if (!std::isfinite(s) || !std::isfinite(e))
    throw Error("arange: unsupported range: " + start.str() + " -> " + end.str());
  const double count = std::ceil((e - s) / st);
  if (!(count <= 9.0e18)) throw Error("arange: invalid size, possible overflow? (" + std::to_string(count) + " values)");
  const int64_t n = static_cast<int64_t>(count);
  if (computes_in_place(n, s, s + static_cast<double>(n) * st, dt)) return make_tensor(inline_arange(n, s, st, dt));
  std::vector<double> v = host_values(n, "arange");
  for (int64_t i = 0; i < n; i++) v[static_cast<size_t>(i)] = s + static_cast<double>(i) * st;
  return from_vector(v, {n}, dt);
}

// More objects than this machine's memory holds are refused up front (an
// allocation that large may be granted and then fault, or abort).
void tensor::check_fits_in_memory(uint64_t count, size_t bytes_each, const char *op) {
  static const uint64_t memory =
      static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGE_SIZE));
  if (count > memory / bytes_each)
    throw Error(std::string(op) + ": out of memory: " + std::to_string(count) + " objects of " +
                std::to_string(bytes_each) + " bytes exceed this machine's " + std::to_string(memory) + " bytes");
}

std::vector<double> tensor::host_values(int64_t n, const char *op) {
  if (n < 0) throw Error(std::string(op) + ": negative count " + std::to_string(n));
  check_fits_in_memory(static_cast<uint64_t>(n), sizeof(double), op);
  try {
    return std::vector<double>(static_cast<size_t>(n));
  } catch (const std::bad_alloc &) {
    throw Error(std::string(op) + ": out of memory building " + std::to_string(n) + " values on the host");
  }
}

Tensor Tensor::from_host(const HostTensor &host) {
  if (host.shape.size() != host.strides.size())
    throw Error("from_host: shape " + shape_str(host.shape) + " and strides " + shape_str(host.strides) +
                " differ in rank");
  int64_t n = host.storage_numel();
  auto buf = uop::Buffer::create(host.dtype, n);
  engine::copy_in(buf, host.storage->data(), static_cast<size_t>(n) * itemsize(host.dtype));
  auto v = shape::View::create(host.shape, host.strides, host.offset);
  if (!v.empty()) {
    auto [lo, hi] = v.index_bounds();
    if (lo < 0 || hi >= n)
      throw Error("from_host: view " + shape_str(host.shape) + " strides " + shape_str(host.strides) + " offset " +
                  std::to_string(host.offset) + " exceeds a storage of " + std::to_string(n) + " elements");
  }
  UOpRef b = UOp::make(Op::Buffer, host.dtype, {}, uop::BufferArg{buf});
  return Tensor(view(b, shape::ShapeTracker{{v}}));
}

Tensor Tensor::from_vector(const std::vector<double> &values, const Shape &shape, DType dtype) {
  check_shape(shape, "from_vector");
  if (static_cast<int64_t>(values.size()) != shape::prod(shape))
    throw Error("from_vector: " + std::to_string(values.size()) + " values do not fill shape " + shape_str(shape));
  HostTensor h = HostTensor::contiguous(dtype, shape);
  for (size_t i = 0; i < values.size(); i++) h.set(static_cast<int64_t>(i), values[i]);
  return from_host(h);
}

const Shape &Tensor::shape() const { return shape_of(uop()); }
int64_t Tensor::numel() const { return shape::prod(shape()); }
int64_t Tensor::size(int64_t dim) const { return shape()[wrap_dim(dim, ndim(), "size")]; }
DType Tensor::dtype() const { return uop()->dtype; }

std::string Tensor::str() const {
  return "Tensor(shape=" + shape_str(shape()) + ", dtype=" + dtype_name(dtype()) + ")";
}

namespace tensor {
UOpRef row_major(const UOpRef &u) {
  if (uop::whole_buffer(u.get()) || u->op == Op::Contiguous) return u;
  // Halves widened to float32: the halves stored row-major, widened as read
  // (exact, and half the bytes; a half convolution's windows stay halves).
  if (u->op == Op::Cast && u->dtype == DType::Float32 &&
      (u->src[0]->dtype == DType::Float16 || u->src[0]->dtype == DType::BFloat16))
    return UOp::make(Op::Cast, u->dtype, {row_major(u->src[0])});
  return UOp::make(Op::Contiguous, u->dtype, {u});
}
}  // namespace tensor

namespace {
// torch's is_contiguous() for strides (Tensor::strides(): the ones torch would
// give the tensor): row-major, size-1 dims ignored; an empty tensor always is.
bool contiguous_strides(const Shape &shape, const std::vector<int64_t> &strides) {
  if (shape::prod(shape) == 0) return true;
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}
}  // namespace

// torch returns the tensor itself when it is contiguous already, so writes
// through the result reach it (and the other way round); otherwise a copy.
// Judged by torch's strides (strides()): an op's result (a pad, a flip, a
// broadcast constant) is a fresh row-major tensor in torch, whatever view
// loom's graph reads it through.
Tensor Tensor::contiguous() const {
  if (contiguous_strides(shape(), strides())) return *this;
  return autograd::record("CloneBackward", {*this}, Tensor(UOp::make(Op::Contiguous, dtype(), {uop()})),
                          [](const Tensor &g, const Tensor &) { return autograd::Grads{g}; });
}

Tensor Tensor::materialize() const {
  return autograd::record("CloneBackward", {*this}, Tensor(tensor::row_major(uop())),
                          [](const Tensor &g, const Tensor &) { return autograd::Grads{g.materialize()}; });
}

std::string Tensor::device() const { return backends::device(); }

Tensor Tensor::to(const std::string &device) const {
  const std::string kind = device.substr(0, device.find(':'));
  if (kind != "cpu" && kind != "cuda")
    throw Error("to(): expected a device type cpu or cuda, got '" + device + "'");
  if (kind == "cuda" && device != "cuda" && device != "cuda:0")
    throw Error("to('" + device + "'): loom uses one GPU, cuda:0");
  if (kind == this->device()) return *this;
  std::string why = engine::device_missing(kind == "cuda" ? "CUDA" : "CPU");
  throw Error("to('" + device + "'): this process computes on " + engine::device_name() +
              " (LOOM_DEVICE) and tensors do not move between devices; run it with LOOM_DEVICE=" +
              (kind == "cuda" ? "CUDA" : "CPU") + (why.empty() ? "" : " (" + why + ")"));
}

Tensor &Tensor::realize() {
  const UOpRef before = impl_->uop;
  impl_->uop = realize_with_updates({before})[0];
  rebase_views(*impl_, before, impl_->uop);
  return *this;
}

HostTensor Tensor::to_host() const {
  Tensor t(row_major(uop()));
  realize_for_host(t);
  const UOpRef &b = base_of(t.uop());
  auto &buf = b->arg_as<uop::BufferArg>().buffer;
  HostTensor h = HostTensor::contiguous(dtype(), shape());
  // An `empty` never written to is allocated by the copy: its values are
  // unspecified (runtime/device.h), as torch.empty's are.
  engine::copy_out(h.storage->data(), buf, static_cast<size_t>(numel()) * itemsize(dtype()));
  return h;
}

double Tensor::item() const {
  if (numel() != 1)
    throw Error("item: a Tensor with " + std::to_string(numel()) + " elements cannot be converted to Scalar");
  return to_host().get(0);
}

RunStats run_stats() { return engine::stats(); }
void reset_run_stats() { engine::stats() = RunStats{}; }
MemoryStats memory_stats() { return engine::memory_stats(); }
void reset_peak_memory() { engine::reset_peak_memory(); }

void realize_all(std::vector<Tensor> &tensors) {
  std::vector<UOpRef> outs;
  for (auto &t : tensors) outs.push_back(t.uop());
  std::vector<UOpRef> done = realize_with_updates(outs);
  for (size_t i = 0; i < tensors.size(); i++) {
    TensorImpl &impl = *TensorImpl::of(tensors[i]);
    impl.uop = done[i];
    rebase_views(impl, outs[i], done[i]);
  }
}

}  // namespace loom
