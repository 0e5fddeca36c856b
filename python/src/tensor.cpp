// loom.Tensor: the C++ Tensor API with torch's Python spelling. Arithmetic
// takes tensors or Python numbers; indexing, in-place operators and printing
// are written in Python (loom/tensor.py) over these methods.
#include "convert.h"
#include "loom/autograd.h"

namespace loom::python {

namespace {

using Pads = std::vector<std::pair<int64_t, int64_t>>;

// A binary op that takes a tensor or a number on either side.
template <typename F>
auto binary(F f) {
  return [f](const Tensor &a, py::handle b) { return f(a, operand(a, b)); };
}
template <typename F>
auto reflected(F f) {
  return [f](const Tensor &a, py::handle b) { return f(operand(a, b), a); };
}

// The unary elementwise methods, one row each: bound on Tensor and listed in
// _C.UNARY_METHODS, from which loom.functions makes loom.<name>(x).
const std::pair<const char *, Tensor (Tensor::*)() const> kUnaryMethods[] = {
    {"neg", &Tensor::neg},   {"abs", &Tensor::abs},         {"exp", &Tensor::exp},   {"log", &Tensor::log},
    {"sqrt", &Tensor::sqrt}, {"rsqrt", &Tensor::rsqrt},     {"sin", &Tensor::sin},   {"cos", &Tensor::cos},
    {"tanh", &Tensor::tanh}, {"sigmoid", &Tensor::sigmoid}, {"relu", &Tensor::relu}, {"erf", &Tensor::erf},
};

Dims dims_arg(py::handle dim) {
  if (dim.is_none()) return {};
  if (py::isinstance<py::int_>(dim)) return {dim.cast<int64_t>()};
  return dim.cast<Dims>();
}

}  // namespace

void bind_tensor(py::module_ &m) {
  py::class_<Tensor> t(m, "Tensor");
  t.def(py::init<>())
      .def(py::init<const Tensor &>(), py::arg("other"))  // a handle sharing `other`'s value, grad and updates
      // ---- properties
      .def_property_readonly("shape", [](const Tensor &x) { return py::tuple(py::cast(x.shape())); })
      .def_property_readonly("dtype", &Tensor::dtype)
      .def_property_readonly("ndim", &Tensor::ndim)
      .def("dim", &Tensor::ndim)
      .def("numel", &Tensor::numel)
      .def("size", [](const Tensor &x, std::optional<int64_t> d) -> py::object {
        if (d) return py::int_(x.size(*d));
        return py::tuple(py::cast(x.shape()));
      }, py::arg("dim") = py::none())
      .def("_str", &Tensor::str)
      // ---- movement
      .def("reshape", &Tensor::reshape)
      .def("permute", &Tensor::permute)
      .def("expand", &Tensor::expand)
      .def("pad", &Tensor::pad, py::arg("pad"), py::arg("value") = 0)
      .def("shrink", &Tensor::shrink)
      .def("flip", &Tensor::flip)
      .def("slice", &Tensor::slice, py::arg("dim"), py::arg("start"), py::arg("stop"), py::arg("step") = 1)
      .def("as_strided", &Tensor::as_strided, py::arg("size"), py::arg("stride"),
           py::arg("storage_offset") = py::none())
      .def("transpose", &Tensor::transpose)
      .def("squeeze", [](const Tensor &x, py::handle dim) { return x.squeeze(dims_arg(dim)); },
           py::arg("dim") = py::none())
      .def("unsqueeze", &Tensor::unsqueeze)
      .def("flatten", &Tensor::flatten, py::arg("start_dim") = 0, py::arg("end_dim") = -1)
      .def("unflatten", &Tensor::unflatten)
      .def("unfold", &Tensor::unfold)
      .def("repeat", &Tensor::repeat)
      .def("tile", &Tensor::tile)
      .def("roll", [](const Tensor &x, py::handle shifts, py::handle dims) {
        return x.roll(dims_arg(shifts), dims_arg(dims));
      }, py::arg("shifts"), py::arg("dims") = py::none())
      .def("tril", &Tensor::tril, py::arg("diagonal") = 0)
      .def("triu", &Tensor::triu, py::arg("diagonal") = 0)
      .def("split", py::overload_cast<int64_t, int64_t>(&Tensor::split, py::const_), py::arg("split_size"),
           py::arg("dim") = 0)
      .def("split", py::overload_cast<const std::vector<int64_t> &, int64_t>(&Tensor::split, py::const_),
           py::arg("split_size"), py::arg("dim") = 0)
      .def("chunk", &Tensor::chunk, py::arg("chunks"), py::arg("dim") = 0)
      .def("unbind", &Tensor::unbind, py::arg("dim") = 0)
      .def("_pad_mode", &Tensor::pad_mode)
      // ---- elementwise
      .def("add", binary([](const Tensor &a, const Tensor &b) { return a.add(b); }))
      .def("sub", binary([](const Tensor &a, const Tensor &b) { return a.sub(b); }))
      .def("mul", binary([](const Tensor &a, const Tensor &b) { return a.mul(b); }))
      .def("div", binary([](const Tensor &a, const Tensor &b) { return a.div(b); }))
      .def("pow", binary([](const Tensor &a, const Tensor &b) { return a.pow(b); }))
      .def("maximum", &Tensor::maximum)
      .def("minimum", &Tensor::minimum)
      .def("eq", binary([](const Tensor &a, const Tensor &b) { return a.eq(b); }))
      .def("ne", binary([](const Tensor &a, const Tensor &b) { return a.ne(b); }))
      .def("lt", binary([](const Tensor &a, const Tensor &b) { return a.lt(b); }))
      .def("le", binary([](const Tensor &a, const Tensor &b) { return a.le(b); }))
      .def("gt", binary([](const Tensor &a, const Tensor &b) { return a.gt(b); }))
      .def("ge", binary([](const Tensor &a, const Tensor &b) { return a.ge(b); }))
      .def("logical_and", binary([](const Tensor &a, const Tensor &b) { return a.logical_and(b); }))
      .def("logical_or", binary([](const Tensor &a, const Tensor &b) { return a.logical_or(b); }))
      .def("logical_not", &Tensor::logical_not)
      .def("floor_divide", binary([](const Tensor &a, const Tensor &b) { return a.floor_divide(b); }))
      .def("remainder", binary([](const Tensor &a, const Tensor &b) { return a.remainder(b); }))
      .def("fmod", binary([](const Tensor &a, const Tensor &b) { return a.fmod(b); }))
      .def("bitwise_and", binary([](const Tensor &a, const Tensor &b) { return a.bitwise_and(b); }))
      .def("bitwise_or", binary([](const Tensor &a, const Tensor &b) { return a.bitwise_or(b); }))
      .def("bitwise_xor", binary([](const Tensor &a, const Tensor &b) { return a.bitwise_xor(b); }))
      .def("bitwise_not", &Tensor::bitwise_not)
      .def("bitwise_left_shift", binary([](const Tensor &a, const Tensor &b) { return a.bitwise_left_shift(b); }))
      .def("bitwise_right_shift", binary([](const Tensor &a, const Tensor &b) { return a.bitwise_right_shift(b); }))
      // self + alpha * other with one rounding for float32, as torch's fused
      // multiply-add kernel rounds: the product and sum in float64, alpha
      // rounded to float32 first (one call for the shim's add/sub with alpha).
      .def("_add_scaled_f32", [](const Tensor &a, const Tensor &b, double alpha) -> std::optional<Tensor> {
        if (a.dtype() != DType::Float32 || b.dtype() != DType::Float32) return std::nullopt;  // the caller's general path
        const double alpha32 = static_cast<float>(alpha);
        return a.cast(DType::Float64).add(b.cast(DType::Float64).mul(alpha32)).cast(DType::Float32);
      })
      .def("_rsub", reflected([](const Tensor &a, const Tensor &b) { return a.sub(b); }))
      .def("_rdiv", reflected([](const Tensor &a, const Tensor &b) { return a.div(b); }))
      .def("_rpow", reflected([](const Tensor &a, const Tensor &b) { return a.pow(b); }))
      .def("_rfloor_divide", reflected([](const Tensor &a, const Tensor &b) { return a.floor_divide(b); }))
      .def("_rremainder", reflected([](const Tensor &a, const Tensor &b) { return a.remainder(b); }))
      .def("where", [](const Tensor &c, py::handle a, py::handle b) {
        Tensor ta = py::isinstance<Tensor>(a)   ? a.cast<Tensor>()
                    : py::isinstance<Tensor>(b) ? operand(b.cast<Tensor>(), a)
                                                : scalar_tensor(a);
        return c.where(ta, operand(ta, b));
      })
      .def("gelu", &Tensor::gelu, py::arg("approximate") = "none")
      .def("clamp", &Tensor::clamp, py::arg("min") = py::none(), py::arg("max") = py::none())
      .def("_cast", &Tensor::cast)
      .def("matmul", &Tensor::matmul)
      // ---- reductions
      .def("sum", [](const Tensor &x, py::handle dim, bool keepdim) { return x.sum(dims_arg(dim), keepdim); },
           py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("prod", [](const Tensor &x, py::handle dim, bool keepdim) { return x.prod(dims_arg(dim), keepdim); },
           py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("mean",
           [](const Tensor &x, py::handle dim, bool keepdim) {
             // torch's x.mean() saves nothing for backward, x.mean(dim) the input.
             return dim.is_none() && !keepdim ? x.mean() : x.mean(dims_arg(dim), keepdim);
           },
           py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("amax", [](const Tensor &x, py::handle dim, bool keepdim) { return x.amax(dims_arg(dim), keepdim); },
           py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("amin", [](const Tensor &x, py::handle dim, bool keepdim) { return x.amin(dims_arg(dim), keepdim); },
           py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("_max_all", py::overload_cast<>(&Tensor::max, py::const_))
      .def("_min_all", py::overload_cast<>(&Tensor::min, py::const_))
      .def("_max_dim", py::overload_cast<int64_t, bool>(&Tensor::max, py::const_))
      .def("_min_dim", py::overload_cast<int64_t, bool>(&Tensor::min, py::const_))
      .def("argmax", &Tensor::argmax, py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("argmin", &Tensor::argmin, py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("var", [](const Tensor &x, py::handle dim, int64_t correction, bool keepdim) {
        return x.var(dims_arg(dim), correction, keepdim);
      }, py::arg("dim") = py::none(), py::arg("correction") = 1, py::arg("keepdim") = false)
      .def("std", [](const Tensor &x, py::handle dim, int64_t correction, bool keepdim) {
        return x.std(dims_arg(dim), correction, keepdim);
      }, py::arg("dim") = py::none(), py::arg("correction") = 1, py::arg("keepdim") = false)
      .def("_std_mean", [](const Tensor &x, py::handle dim, int64_t correction, bool keepdim) {
        return x.std_mean(dims_arg(dim), correction, keepdim);
      })
      .def("_cov", &Tensor::cov)
      .def("cumsum", &Tensor::cumsum, py::arg("dim"))
      .def("cumprod", &Tensor::cumprod, py::arg("dim"))
      .def("sort", &Tensor::sort, py::arg("dim") = -1, py::arg("descending") = false)
      .def("argsort", &Tensor::argsort, py::arg("dim") = -1, py::arg("descending") = false)
      .def("topk", &Tensor::topk, py::arg("k"), py::arg("dim") = -1, py::arg("largest") = true,
           py::arg("sorted") = true)
      // ---- indexing
      .def("gather", &Tensor::gather, py::arg("dim"), py::arg("index"))
      .def("scatter", &Tensor::scatter, py::arg("dim"), py::arg("index"), py::arg("src"))
      .def("scatter_add", &Tensor::scatter_add, py::arg("dim"), py::arg("index"), py::arg("src"))
      .def("index_select", &Tensor::index_select, py::arg("dim"), py::arg("index"))
      .def("_index_list", static_cast<Tensor (Tensor::*)(const std::vector<std::optional<Tensor>> &) const>(
                              &Tensor::index))
      .def("_index_put", &Tensor::index_put, py::arg("indices"), py::arg("values"), py::arg("accumulate") = false)
      .def("masked_fill", &Tensor::masked_fill, py::arg("mask"), py::arg("value"))
      .def("masked_select", &Tensor::masked_select, py::arg("mask"))
      .def("one_hot", &Tensor::one_hot, py::arg("num_classes") = -1)
      // ---- random fills, in place (through views too)
      .def("uniform_", &Tensor::uniform_, py::arg("from") = 0.0, py::arg("to") = 1.0,
           py::return_value_policy::reference_internal)
      .def("normal_", &Tensor::normal_, py::arg("mean") = 0.0, py::arg("std") = 1.0,
           py::return_value_policy::reference_internal)
      // random_(to) draws from [0, to), random_(from, to) from [from, to), as in torch
      .def("random_", [](Tensor &x, int64_t a, std::optional<int64_t> b) -> Tensor & {
        return b ? x.random_(a, *b) : x.random_(0, a);
      }, py::arg("from"), py::arg("to") = py::none(), py::return_value_policy::reference_internal)
      // ---- autograd
      .def_property_readonly("requires_grad", &Tensor::requires_grad)
      .def("_requires_grad_", [](Tensor &x, bool on) { x.requires_grad_(on); })
      .def_property_readonly("is_leaf", &Tensor::is_leaf)
      .def("retain_grad", &Tensor::retain_grad)
      .def_property_readonly("retains_grad", &Tensor::retains_grad)
      .def_property("grad", &Tensor::grad, &Tensor::set_grad)
      .def_property_readonly("_grad_fn_name", &Tensor::grad_fn_name)
      .def("detach", &Tensor::detach)
      // torch's retain_graph defaults to create_graph; loom records no graph of the backward itself.
      .def("backward", [](const Tensor &t, std::optional<Tensor> gradient, std::optional<bool> retain_graph,
                          bool create_graph) {
        if (create_graph) {
          PyErr_SetString(PyExc_NotImplementedError, "Tensor.backward(create_graph=True) is not supported by loom");
          throw py::error_already_set();
        }
        t.backward(gradient, retain_graph.value_or(false));
      }, py::arg("gradient") = py::none(), py::arg("retain_graph") = py::none(), py::arg("create_graph") = false)
      .def("_assign", [](Tensor &x, const Tensor &v) { x.assign(v); })
      .def("_check_in_place", &Tensor::check_in_place, py::arg("operands"))
      .def_property_readonly("_version", &Tensor::version)
      // Rebinds this handle to `other`'s value (torch's `p.data = t`): the Python object keeps its identity.
      .def("_set_data", [](Tensor &x, const Tensor &other) { x = other; })
      // ---- realization
      .def("contiguous", &Tensor::contiguous)
      .def("materialize", &Tensor::materialize)
      .def("_strides", &Tensor::strides)
      .def("_storage_offset", &Tensor::storage_offset)
      .def("_storage_base", [](const Tensor &x) {
        auto [base, id] = x.storage_base();
        return py::make_tuple(base ? py::cast(*base) : py::none(), reinterpret_cast<uintptr_t>(id));
      })
      .def("realize", [](Tensor &x) { x.realize(); return x; })
      .def("_item", [](const Tensor &x) -> py::object {
        if (x.numel() != 1)
          throw ValueError("a Tensor with " + std::to_string(x.numel()) + " elements cannot be converted to Scalar");
        HostTensor h = x.to_host();
        if (x.dtype() == DType::Bool) return py::bool_(h.get_int(0) != 0);
        if (is_int(x.dtype())) return py::int_(h.get_int(0));
        return py::float_(h.get(0));
      })
      .def("numpy", &to_numpy)
      .def("__len__", [](const Tensor &x) {
        if (x.ndim() == 0) throw py::type_error("len() of a 0-d tensor");
        return x.size(0);
      });
  py::list unary;
  for (const auto &[name, method] : kUnaryMethods) {
    t.def(name, method);
    unary.append(name);
  }
  m.attr("UNARY_METHODS") = py::tuple(unary);
}

}  // namespace loom::python
