// The only translation unit that includes ATen: host <-> torch conversion and
// the op dispatch table. ATen/ATen.h instead of torch/torch.h halves its build.
#include <ATen/ATen.h>
#include <c10/util/Logging.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "torch_ops.h"

namespace loom::reference {

namespace {

// torch writes a C++ backtrace into every error it raises, symbolizing each
// frame (dladdr): ~10 ms an error, and the conformance suite has torch reject
// tens of thousands of cases. The oracle reads only what_without_backtrace(),
// so the backtrace is left out from the start of any program that links the
// oracle; LOOM_TORCH_BACKTRACES=1 keeps it (a torch error's what() then shows it).
const bool kTorchBacktraces = [] {
  const char *keep = std::getenv("LOOM_TORCH_BACKTRACES");
  const bool on = keep && std::string(keep) == "1";
  if (!on) c10::SetStackTraceFetcher([] { return std::string(); });
  return on;
}();

// torch 1.13's gelu_backward with approximate="none" reads a non-contiguous
// incoming gradient wrongly on float32 and bfloat16 (off by orders of
// magnitude, or uninitialized values; float64 and "tanh" are right). The
// oracle's gelu runs torch's own backward kernel on a contiguous copy of the
// gradient; the forward, the saved input and its version check are torch's.
struct GeluContiguousGrad : torch::autograd::Function<GeluContiguousGrad> {
  static at::Tensor forward(torch::autograd::AutogradContext *ctx, const at::Tensor &x, std::string approximate) {
    ctx->save_for_backward({x});
    ctx->saved_data["approximate"] = approximate;
    return at::gelu(x, approximate);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                 torch::autograd::variable_list grads) {
    const at::Tensor x = ctx->get_saved_variables()[0];
    const std::string approximate = ctx->saved_data["approximate"].toStringRef();
    return {at::gelu_backward(grads[0].contiguous(), x, approximate), at::Tensor()};
  }
};

}  // namespace

at::ScalarType to_torch_dtype(DType dt) {
  switch (dt) {
    case DType::Bool: return at::kBool;
    case DType::UInt8: return at::kByte;
    case DType::Int8: return at::kChar;
    case DType::Int16: return at::kShort;
    case DType::Int32: return at::kInt;
    case DType::Int64: return at::kLong;
    case DType::Float16: return at::kHalf;
    case DType::BFloat16: return at::kBFloat16;
    case DType::Float32: return at::kFloat;
    case DType::Float64: return at::kDouble;
  }
  throw std::invalid_argument("reference: unknown dtype");
}

DType from_torch_dtype(at::ScalarType st) {
  for (DType dt : kAllDTypes)
    if (to_torch_dtype(dt) == st) return dt;
  throw std::runtime_error(std::string("reference: torch returned unsupported dtype ") + c10::toString(st));
}

at::Scalar to_torch_scalar(const Scalar &s) {
  switch (s.kind) {
    case Scalar::Kind::Bool: return at::Scalar(s.i != 0);
    case Scalar::Kind::Int: return at::Scalar(static_cast<int64_t>(s.i));
    case Scalar::Kind::Float: return at::Scalar(s.f);
  }
  return at::Scalar(0);
}

// A torch tensor over a private copy of the whole host storage, viewed exactly
// as the host view. Torch rejects negative strides, so those dims are built
// reversed with a positive stride and flipped back (same values, fresh storage,
// which is also what torch itself would have produced). A size-1 or empty dim
// has no direction: its stride sign is ignored, so such views stay plain views.
// `raw`, when given, receives the storage tensor (to tell views from copies).
at::Tensor to_torch(const HostTensor &h, at::Tensor *raw) {
  const at::ScalarType st = to_torch_dtype(h.dtype);
  const int64_t es = static_cast<int64_t>(c10::elementSize(st));
  const int64_t n = h.storage ? static_cast<int64_t>(h.storage->size()) / es : 0;
  at::Tensor storage = at::empty({n}, at::TensorOptions().dtype(st));
  if (n) std::memcpy(storage.data_ptr(), h.storage->data(), static_cast<size_t>(n * es));
  if (raw) *raw = storage;
  if (h.shape.size() != h.strides.size()) throw std::invalid_argument("reference: host shape/strides rank mismatch");
  const bool empty = std::any_of(h.shape.begin(), h.shape.end(), [](int64_t s) { return s == 0; });
  std::vector<int64_t> strides = h.strides;
  std::vector<int64_t> flips;
  int64_t offset = h.offset;
  for (size_t d = 0; d < strides.size(); ++d) {
    if (strides[d] >= 0) continue;
    if (!empty && h.shape[d] > 1) {
      offset += (h.shape[d] - 1) * strides[d];
      flips.push_back(static_cast<int64_t>(d));
    }
    strides[d] = -strides[d];
  }
  at::Tensor v = storage.as_strided(h.shape, strides, offset);
  return flips.empty() ? v : v.flip(flips);
}

HostTensor from_torch(const at::Tensor &t) {
  const at::Tensor c = t.contiguous();
  HostTensor h;
  h.dtype = from_torch_dtype(c.scalar_type());
  h.shape = c.sizes().vec();
  h.strides.assign(h.shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(h.shape.size()) - 2; d >= 0; --d)
    h.strides[d] = h.strides[d + 1] * std::max<int64_t>(h.shape[d + 1], 1);
  h.offset = 0;
  const size_t bytes = static_cast<size_t>(c.numel()) * c.element_size();
  h.storage = std::make_shared<std::vector<uint8_t>>(bytes);
  if (bytes) std::memcpy(h.storage->data(), c.data_ptr(), bytes);
  return h;
}

namespace {

std::vector<std::pair<int64_t, int64_t>> pairs(const std::vector<int64_t> &flat, int64_t ndim, const char *op) {
  if (static_cast<int64_t>(flat.size()) != 2 * ndim)
    throw std::runtime_error(std::string(op) + ": expected " + std::to_string(ndim) + " (begin, end) pairs, got " +
                             std::to_string(flat.size() / 2));
  std::vector<std::pair<int64_t, int64_t>> out;
  for (size_t i = 0; i + 1 < flat.size(); i += 2) out.emplace_back(flat[i], flat[i + 1]);
  return out;
}

// Python's slice.indices(n) followed by the element count.
struct SliceRange {
  int64_t start, count;
};
SliceRange python_slice(int64_t n, std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step) {
  if (step == 0) throw std::runtime_error("slice: step cannot be zero");
  auto norm = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v < 0 ? *v + n : *v;
    return step > 0 ? std::clamp<int64_t>(x, 0, n) : std::clamp<int64_t>(x, -1, n - 1);
  };
  const int64_t b = norm(start, step > 0 ? 0 : n - 1);
  const int64_t e = norm(stop, step > 0 ? n : -1);
  int64_t count = step > 0 ? (e - b + step - 1) / step : (b - e + (-step) - 1) / (-step);
  return {b, std::max<int64_t>(count, 0)};
}

// Torch has no negative-step slices: flip, then slice forward (a fresh copy in
// torch, which is exactly when loom says torch would have copied).
at::Tensor slice(const at::Tensor &x, const Attrs &a) {
  const int64_t dim = at::maybe_wrap_dim(a.get_int("dim"), x.dim());
  const int64_t n = x.size(dim), step = a.get_int("step");
  const SliceRange r = python_slice(n, a.opt_int("start"), a.opt_int("stop"), step);
  if (r.count == 0) return x.narrow(dim, 0, 0);
  if (step > 0) return x.slice(dim, r.start, r.start + (r.count - 1) * step + 1, step);
  const int64_t fstart = n - 1 - r.start;
  return x.flip({dim}).slice(dim, fstart, fstart + (r.count - 1) * (-step) + 1, -step);
}

std::vector<int64_t> wrapped_unique_dims(const std::vector<int64_t> &dims, int64_t ndim) {
  std::vector<int64_t> out;
  std::set<int64_t> seen;
  for (int64_t d : dims) {
    const int64_t w = at::maybe_wrap_dim(d, ndim);
    if (!seen.insert(w).second) throw std::runtime_error("dim " + std::to_string(w) + " appears multiple times in the list of dims");
    out.push_back(w);
  }
  return out;
}

// torch.prod takes a single dim; several dims reduce one after another, highest first.
at::Tensor prod(const at::Tensor &x, const Attrs &a) {
  const bool keepdim = a.get_bool("keepdim", false);
  std::vector<int64_t> dims = wrapped_unique_dims(a.get_ints("dims", {}), x.dim());
  if (dims.empty()) {
    at::Tensor r = at::prod(x);
    return keepdim ? r.reshape(std::vector<int64_t>(x.dim(), 1)) : r;
  }
  std::sort(dims.rbegin(), dims.rend());
  at::Tensor r = x;
  for (int64_t d : dims) r = at::prod(r, d, keepdim);
  return r;
}

at::TensorOptions creation_options(const Attrs &a, DType dflt) {
  return at::TensorOptions().dtype(to_torch_dtype(a.opt_dtype("dtype").value_or(dflt)));
}

c10::optional<int64_t> c10_opt(std::optional<int64_t> v) { return v ? c10::optional<int64_t>(*v) : c10::nullopt; }

DType scalar_default_dtype(const Scalar &s) {
  return s.kind == Scalar::Kind::Bool ? DType::Bool : s.kind == Scalar::Kind::Int ? DType::Int64 : DType::Float32;
}

// Binary ops take a tensor-tensor form or, with attr "scalar", a tensor-scalar form.
TorchOp binary(at::Tensor (*tt)(const at::Tensor &, const at::Tensor &),
               at::Tensor (*ts)(const at::Tensor &, const at::Scalar &)) {
  return [tt, ts](const TorchArgs &x, const Attrs &a) {
    if (a.has("scalar")) {
      if (!ts) throw std::runtime_error("reference: this op has no scalar form");
      return ts(x.at(0), to_torch_scalar(a.get_scalar("scalar")));
    }
    return tt(x.at(0), x.at(1));
  };
}

TorchOp unary(at::Tensor (*f)(const at::Tensor &)) {
  return [f](const TorchArgs &x, const Attrs &) { return f(x.at(0)); };
}

const OpMap &ops() {
  static const OpMap table = [] {
    OpMap t;
    add_nn_ops(t);
    add_index_ops(t);
    // ---- elementwise
    t["add"] = binary([](const at::Tensor &a, const at::Tensor &b) { return at::add(a, b); },
                      [](const at::Tensor &a, const at::Scalar &b) { return at::add(a, b); });
    t["sub"] = binary([](const at::Tensor &a, const at::Tensor &b) { return at::sub(a, b); },
                      [](const at::Tensor &a, const at::Scalar &b) { return at::sub(a, b); });
    t["mul"] = binary([](const at::Tensor &a, const at::Tensor &b) { return at::mul(a, b); },
                      [](const at::Tensor &a, const at::Scalar &b) { return at::mul(a, b); });
    t["div"] = binary([](const at::Tensor &a, const at::Tensor &b) { return at::div(a, b); },
                      [](const at::Tensor &a, const at::Scalar &b) { return at::div(a, b); });
    t["pow"] = binary([](const at::Tensor &a, const at::Tensor &b) { return at::pow(a, b); },
                      [](const at::Tensor &a, const at::Scalar &b) { return at::pow(a, b); });
    t["maximum"] = binary([](const at::Tensor &a, const at::Tensor &b) { return at::maximum(a, b); }, nullptr);
    t["minimum"] = binary([](const at::Tensor &a, const at::Tensor &b) { return at::minimum(a, b); }, nullptr);
    t["eq"] = binary([](const at::Tensor &a, const at::Tensor &b) { return at::eq(a, b); }, nullptr);
    t["ne"] = binary([](const at::Tensor &a, const at::Tensor &b) { return at::ne(a, b); }, nullptr);
    t["lt"] = binary([](const at::Tensor &a, const at::Tensor &b) { return at::lt(a, b); }, nullptr);
    t["le"] = binary([](const at::Tensor &a, const at::Tensor &b) { return at::le(a, b); }, nullptr);
    t["gt"] = binary([](const at::Tensor &a, const at::Tensor &b) { return at::gt(a, b); }, nullptr);
    t["ge"] = binary([](const at::Tensor &a, const at::Tensor &b) { return at::ge(a, b); }, nullptr);
    t["logical_and"] =
        binary([](const at::Tensor &a, const at::Tensor &b) { return at::logical_and(a, b); }, nullptr);
    t["logical_or"] = binary([](const at::Tensor &a, const at::Tensor &b) { return at::logical_or(a, b); }, nullptr);
    t["floor_divide"] = binary([](const at::Tensor &a, const at::Tensor &b) { return at::floor_divide(a, b); }, nullptr);
    t["remainder"] = binary([](const at::Tensor &a, const at::Tensor &b) { return at::remainder(a, b); }, nullptr);
    t["fmod"] = binary([](const at::Tensor &a, const at::Tensor &b) { return at::fmod(a, b); }, nullptr);
    t["bitwise_and"] = binary([](const at::Tensor &a, const at::Tensor &b) { return at::bitwise_and(a, b); }, nullptr);
    t["bitwise_or"] = binary([](const at::Tensor &a, const at::Tensor &b) { return at::bitwise_or(a, b); }, nullptr);
    t["bitwise_xor"] = binary([](const at::Tensor &a, const at::Tensor &b) { return at::bitwise_xor(a, b); }, nullptr);
    t["bitwise_left_shift"] =
        binary([](const at::Tensor &a, const at::Tensor &b) { return at::bitwise_left_shift(a, b); }, nullptr);
    t["bitwise_right_shift"] =
        binary([](const at::Tensor &a, const at::Tensor &b) { return at::bitwise_right_shift(a, b); }, nullptr);
    t["bitwise_not"] = unary([](const at::Tensor &a) { return at::bitwise_not(a); });
    t["logical_not"] = unary([](const at::Tensor &a) { return at::logical_not(a); });
    t["where"] = [](const TorchArgs &x, const Attrs &) { return at::where(x.at(0).to(at::kBool), x.at(1), x.at(2)); };
    t["neg"] = unary([](const at::Tensor &a) { return at::neg(a); });
    t["abs"] = unary([](const at::Tensor &a) { return at::abs(a); });
    t["exp"] = unary([](const at::Tensor &a) { return at::exp(a); });
    t["log"] = unary([](const at::Tensor &a) { return at::log(a); });
    t["sqrt"] = unary([](const at::Tensor &a) { return at::sqrt(a); });
    // torch 1.13's bfloat16 rsqrt rounds twice (the square root, then its
    // reciprocal) on its scalar path, which runs for small tensors and the
    // tails of large ones, and once on its vectorized path; the oracle is the
    // single rounding of the float32 answer, loom's contract for half types.
    t["rsqrt"] = unary([](const at::Tensor &a) {
      return a.scalar_type() == at::kBFloat16 ? at::rsqrt(a.to(at::kFloat)).to(at::kBFloat16) : at::rsqrt(a);
    });
    t["sin"] = unary([](const at::Tensor &a) { return at::sin(a); });
    t["cos"] = unary([](const at::Tensor &a) { return at::cos(a); });
    t["tanh"] = unary([](const at::Tensor &a) { return at::tanh(a); });
    t["sigmoid"] = unary([](const at::Tensor &a) { return at::sigmoid(a); });
    t["relu"] = unary([](const at::Tensor &a) { return at::relu(a); });
    t["erf"] = unary([](const at::Tensor &a) { return at::erf(a); });
    t["gelu"] = [](const TorchArgs &x, const Attrs &a) {
      return GeluContiguousGrad::apply(x.at(0), a.has("approximate") ? a.get_string("approximate") : "none");
    };
    t["cast"] = [](const TorchArgs &x, const Attrs &a) { return x.at(0).to(to_torch_dtype(a.get_dtype("dtype"))); };
    // ---- reductions
    t["sum"] = [](const TorchArgs &x, const Attrs &a) {
      return at::sum(x.at(0), wrapped_unique_dims(a.get_ints("dims", {}), x.at(0).dim()), a.get_bool("keepdim", false));
    };
    t["prod"] = [](const TorchArgs &x, const Attrs &a) { return prod(x.at(0), a); };
    t["mean"] = [](const TorchArgs &x, const Attrs &a) {
      return at::mean(x.at(0), a.get_ints("dims", {}), a.get_bool("keepdim", false));
    };
    t["amax"] = [](const TorchArgs &x, const Attrs &a) {
      return at::amax(x.at(0), a.get_ints("dims", {}), a.get_bool("keepdim", false));
    };
    t["amin"] = [](const TorchArgs &x, const Attrs &a) {
      return at::amin(x.at(0), a.get_ints("dims", {}), a.get_bool("keepdim", false));
    };
    t["max"] = unary([](const at::Tensor &a) { return at::max(a); });
    t["min"] = unary([](const at::Tensor &a) { return at::min(a); });
    t["argmax"] = [](const TorchArgs &x, const Attrs &a) {
      return at::argmax(x.at(0), c10_opt(a.opt_int("dim")), a.get_bool("keepdim", false));
    };
    t["argmin"] = [](const TorchArgs &x, const Attrs &a) {
      return at::argmin(x.at(0), c10_opt(a.opt_int("dim")), a.get_bool("keepdim", false));
    };
    // ---- creation
    t["zeros"] = [](const TorchArgs &, const Attrs &a) {
      return at::zeros(a.get_ints("shape"), creation_options(a, DType::Float32));
    };
    t["ones"] = [](const TorchArgs &, const Attrs &a) {
      return at::ones(a.get_ints("shape"), creation_options(a, DType::Float32));
    };
    t["empty"] = t["zeros"];  // only shape and dtype are comparable
    t["full"] = [](const TorchArgs &, const Attrs &a) {
      const Scalar v = a.get_scalar("value");
      return at::full(a.get_ints("shape"), to_torch_scalar(v), creation_options(a, scalar_default_dtype(v)));
    };
    t["arange"] = [](const TorchArgs &, const Attrs &a) {
      const Scalar start = a.has("start") ? a.get_scalar("start") : Scalar(0);
      const Scalar end = a.get_scalar("end");
      const Scalar step = a.has("step") ? a.get_scalar("step") : Scalar(1);
      const bool integral = start.kind != Scalar::Kind::Float && end.kind != Scalar::Kind::Float &&
                            step.kind != Scalar::Kind::Float;
      return at::arange(to_torch_scalar(start), to_torch_scalar(end), to_torch_scalar(step),
                        creation_options(a, integral ? DType::Int64 : DType::Float32));
    };
    // ---- movement
    t["reshape"] = [](const TorchArgs &x, const Attrs &a) { return x.at(0).reshape(a.get_ints("shape")); };
    t["permute"] = [](const TorchArgs &x, const Attrs &a) { return x.at(0).permute(a.get_ints("order")); };
    t["expand"] = [](const TorchArgs &x, const Attrs &a) { return x.at(0).expand(a.get_ints("shape")); };
    t["pad"] = [](const TorchArgs &x, const Attrs &a) {
      const auto p = pairs(a.get_ints("pad"), x.at(0).dim(), "pad");
      std::vector<int64_t> torch_pad;  // torch lists the last dim first
      for (auto it = p.rbegin(); it != p.rend(); ++it) {
        if (it->first < 0 || it->second < 0) throw std::runtime_error("pad: negative padding");
        torch_pad.push_back(it->first);
        torch_pad.push_back(it->second);
      }
      const Scalar v = a.has("value") ? a.get_scalar("value") : Scalar(0);
      if (x.at(0).numel() == 0) {
        // torch 1.13 rejects padding some empty tensors (it reports a negative
        // output size where the empty dim is not padded); the natural answer
        // is the padded shape filled with the value, laid out row-major. It
        // keeps the input's grad history (an empty gradient), as torch's pad
        // does where it accepts an empty input.
        std::vector<int64_t> shape = x.at(0).sizes().vec();
        for (size_t d = 0; d < p.size(); ++d) shape[d] += p[d].first + p[d].second;
        const at::Tensor filled = at::full(shape, to_torch_scalar(v), x.at(0).options());
        if (!x.at(0).requires_grad()) return filled;
        return at::where(at::ones(shape, x.at(0).options().dtype(at::kBool)), filled, x.at(0).sum());
      }
      return at::constant_pad_nd(x.at(0), torch_pad, to_torch_scalar(v));
    };
    t["shrink"] = [](const TorchArgs &x, const Attrs &a) {
      const auto p = pairs(a.get_ints("bounds"), x.at(0).dim(), "shrink");
      at::Tensor r = x.at(0);
      for (size_t d = 0; d < p.size(); ++d) {
        const auto [b, e] = p[d];
        if (b < 0 || b > e || e > r.size(d))
          throw std::runtime_error("shrink: bounds (" + std::to_string(b) + ", " + std::to_string(e) +
                                   ") out of range for dim " + std::to_string(d));
        r = r.narrow(static_cast<int64_t>(d), b, e - b);
      }
      return r;
    };
    t["flip"] = [](const TorchArgs &x, const Attrs &a) { return x.at(0).flip(a.get_ints("dims")); };
    t["slice"] = [](const TorchArgs &x, const Attrs &a) { return slice(x.at(0), a); };
    t["as_strided"] = [](const TorchArgs &x, const Attrs &a) {
      return x.at(0).as_strided(a.get_ints("size"), a.get_ints("stride"), c10_opt(a.opt_int("offset")));
    };
    t["transpose"] = [](const TorchArgs &x, const Attrs &a) {
      return x.at(0).transpose(a.get_int("dim0"), a.get_int("dim1"));
    };
    t["contiguous"] = unary([](const at::Tensor &a) { return a.contiguous(); });
    // A row-major copy always (contiguous() returns a contiguous input itself).
    t["clone_contiguous"] = unary([](const at::Tensor &a) { return a.clone(at::MemoryFormat::Contiguous); });
    // ---- random, in place on the view (values are not compared: torch's
    // generator is not loom's; what matters is which inputs torch refuses)
    t["uniform_"] = [](const TorchArgs &x, const Attrs &a) {
      at::Tensor v = x.at(0);
      return v.uniform_(static_cast<double>(a.get_int("low")), static_cast<double>(a.get_int("high")));
    };
    t["normal_"] = [](const TorchArgs &x, const Attrs &a) {
      at::Tensor v = x.at(0);
      return v.normal_(a.get_double("mean"), a.get_double("std"));
    };
    t["random_"] = [](const TorchArgs &x, const Attrs &a) {
      at::Tensor v = x.at(0);
      return v.random_(a.get_int("low"), a.get_int("high"));
    };
    // Random creation: likewise, which dtypes and arguments torch accepts.
    t["rand"] = [](const TorchArgs &, const Attrs &a) {
      return at::rand(a.get_ints("shape"), creation_options(a, DType::Float32));
    };
    t["randn"] = [](const TorchArgs &, const Attrs &a) {
      return at::randn(a.get_ints("shape"), creation_options(a, DType::Float32));
    };
    t["randint"] = [](const TorchArgs &, const Attrs &a) {
      return at::randint(a.get_int("low"), a.get_int("high"), a.get_ints("shape"), creation_options(a, DType::Int64));
    };
    t["randperm"] = [](const TorchArgs &, const Attrs &a) {
      return at::randperm(a.get_int("n"), creation_options(a, DType::Int64));
    };
    return t;
  }();
  return table;
}

}  // namespace

std::string first_line(const std::string &s) { return s.substr(0, s.find('\n')); }

bool missing_half_kernel(const std::string &msg) {
  return msg.find("not implemented for 'Half'") != std::string::npos ||
         msg.find("not implemented for 'BFloat16'") != std::string::npos;
}

at::Tensor run_torch(const std::string &op, const TorchArgs &in, const Attrs &a, bool cast_up_mixed_half) {
  auto it = ops().find(op);
  if (it == ops().end()) throw std::invalid_argument("reference: unknown op '" + op + "'");
  return run_with_half_fallback(it->second, in, a, cast_up_mixed_half);
}

at::Tensor chain(const HostTensor &base, const std::vector<ViewStep> &steps, at::Tensor *raw) {
  at::Tensor t = to_torch(base, raw);
  for (const ViewStep &s : steps) t = run_torch(s.op, {t}, s.attrs);
  return t;
}

bool knows(const std::string &op) { return ops().count(op) != 0; }

HostTensor run(const std::string &op, const std::vector<HostTensor> &inputs, const Attrs &attrs,
               std::vector<int64_t> *strides) {
  return torch_call(op, [&] {
    TorchArgs in;
    for (const HostTensor &h : inputs) in.push_back(to_torch(h));
    const at::Tensor out = run_torch(op, in, attrs);
    if (strides) *strides = out.strides().vec();
    return from_torch(out);
  });
}

HostTensor apply_view_chain(const HostTensor &base, const std::vector<ViewStep> &steps) {
  return torch_call("view chain", [&] { return from_torch(chain(base, steps)); });
}

ViewInfo view_chain_info(const HostTensor &base, const std::vector<ViewStep> &steps) {
  return torch_call("view chain", [&] {
    at::Tensor raw;
    const at::Tensor t = chain(base, steps, &raw);
    ViewInfo v;
    v.base_storage = t.storage().is_alias_of(raw.storage());
    v.shape = t.sizes().vec();
    v.strides = t.strides().vec();
    v.offset = t.storage_offset();
    v.storage_numel = static_cast<int64_t>(t.storage().nbytes() / t.element_size());
    return v;
  });
}

}  // namespace loom::reference
