// loom._C.nn: the functional layers of loom/nn.h with torch.nn.functional's
// argument names; int-or-pair arguments take an int or a 2-sequence.
#include "convert.h"
#include "loom/nn.h"

namespace loom::python {

namespace {

using nn::Pair2;

Pair2 pair_arg(py::handle h, const char *what) {
  if (py::isinstance<py::int_>(h)) return Pair2(h.cast<int64_t>());
  auto v = h.cast<std::vector<int64_t>>();
  if (v.size() == 1) return Pair2(v[0]);
  if (v.size() != 2) throw ValueError(std::string(what) + " must be an int or a pair of ints");
  return Pair2(v[0], v[1]);
}

std::optional<Pair2> optional_pair(py::handle h, const char *what) {
  if (h.is_none()) return std::nullopt;
  if (!py::isinstance<py::int_>(h) && py::len(h) == 0) return std::nullopt;  // torch: stride=[] means kernel_size
  return pair_arg(h, what);
}

nn::Padding2 padding_arg(py::handle h) {
  if (py::isinstance<py::str>(h)) return nn::Padding2(h.cast<std::string>().c_str());  // keeps a copy
  return nn::Padding2(pair_arg(h, "padding"));
}

}  // namespace

void bind_nn(py::module_ &m) {
  py::module_ f = m.def_submodule("nn", "loom/nn.h: functional layers");
  f.def("linear", &nn::linear, py::arg("input"), py::arg("weight"), py::arg("bias") = py::none());
  f.def("conv2d", [](const Tensor &x, const Tensor &w, const std::optional<Tensor> &b, py::handle stride,
                     py::handle padding, py::handle dilation, int64_t groups) {
    return nn::conv2d(x, w, b, pair_arg(stride, "stride"), padding_arg(padding), pair_arg(dilation, "dilation"),
                      groups);
  }, py::arg("input"), py::arg("weight"), py::arg("bias") = py::none(), py::arg("stride") = 1,
        py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("groups") = 1);
  f.def("max_pool2d", [](const Tensor &x, py::handle k, py::handle stride, py::handle padding, py::handle dilation,
                         bool ceil_mode) {
    return nn::max_pool2d(x, pair_arg(k, "kernel_size"), optional_pair(stride, "stride"), pair_arg(padding, "padding"),
                          pair_arg(dilation, "dilation"), ceil_mode);
  }, py::arg("input"), py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0,
        py::arg("dilation") = 1, py::arg("ceil_mode") = false);
  f.def("avg_pool2d", [](const Tensor &x, py::handle k, py::handle stride, py::handle padding, bool ceil_mode,
                         bool count_include_pad, std::optional<int64_t> divisor_override) {
    return nn::avg_pool2d(x, pair_arg(k, "kernel_size"), optional_pair(stride, "stride"), pair_arg(padding, "padding"),
                          ceil_mode, count_include_pad, divisor_override);
  }, py::arg("input"), py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0,
        py::arg("ceil_mode") = false, py::arg("count_include_pad") = true, py::arg("divisor_override") = py::none());
  f.def("adaptive_avg_pool2d", [](const Tensor &x, py::handle size) {
    return nn::adaptive_avg_pool2d(x, pair_arg(size, "output_size"));
  }, py::arg("input"), py::arg("output_size"));
  f.def("batch_norm", &nn::batch_norm, py::arg("input"), py::arg("running_mean"), py::arg("running_var"),
        py::arg("weight") = py::none(), py::arg("bias") = py::none(), py::arg("training") = false,
        py::arg("momentum") = 0.1, py::arg("eps") = 1e-5);
  f.def("layer_norm", &nn::layer_norm, py::arg("input"), py::arg("normalized_shape"), py::arg("weight") = py::none(),
        py::arg("bias") = py::none(), py::arg("eps") = 1e-5);
  f.def("softmax", &nn::softmax, py::arg("input"), py::arg("dim"));
  f.def("log_softmax", &nn::log_softmax, py::arg("input"), py::arg("dim"));
  f.def("silu", &nn::silu, py::arg("input"));
  f.def("leaky_relu", &nn::leaky_relu, py::arg("input"), py::arg("negative_slope") = 0.01);
  f.def("elu", &nn::elu, py::arg("input"), py::arg("alpha") = 1.0);
  f.def("softplus", &nn::softplus, py::arg("input"), py::arg("beta") = 1.0, py::arg("threshold") = 20.0);
  f.def("hardtanh", &nn::hardtanh, py::arg("input"), py::arg("min_val") = -1.0, py::arg("max_val") = 1.0);
  f.def("dropout", &nn::dropout, py::arg("input"), py::arg("p") = 0.5, py::arg("training") = true);
  f.def("cross_entropy", &nn::cross_entropy, py::arg("input"), py::arg("target"), py::arg("weight") = py::none(),
        py::arg("reduction") = "mean", py::arg("label_smoothing") = 0.0, py::arg("ignore_index") = -100);
  f.def("nll_loss", &nn::nll_loss, py::arg("input"), py::arg("target"), py::arg("weight") = py::none(),
        py::arg("reduction") = "mean", py::arg("ignore_index") = -100);
  f.def("mse_loss", &nn::mse_loss, py::arg("input"), py::arg("target"), py::arg("reduction") = "mean");
  f.def("binary_cross_entropy_with_logits", &nn::binary_cross_entropy_with_logits, py::arg("input"),
        py::arg("target"), py::arg("weight") = py::none(), py::arg("reduction") = "mean",
        py::arg("pos_weight") = py::none());
}

}  // namespace loom::python
