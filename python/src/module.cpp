// loom._C: the pybind11 module under the `loom` package. Tensor methods are
// in tensor.cpp, functional layers in nn.cpp; this file binds dtypes,
// creation, grad mode, autograd.grad and the engine's counters (the JIT is
// in jit.cpp).
#include "convert.h"
#include "loom/autograd.h"
#include "loom/backends.h"
#include "loom/random.h"

namespace loom::python {

void bind_tensor(py::module_ &m);
void bind_nn(py::module_ &m);
void bind_jit(py::module_ &m);
void bind_inspect(py::module_ &m);
void bind_distributed(py::module_ &m);

namespace {

void bind_dtypes(py::module_ &m) {
  py::enum_<DType> d(m, "dtype");
  for (DType dt : kAllDTypes) d.value(dtype_name(dt), dt);
  d.def_property_readonly("itemsize", [](DType dt) { return itemsize(dt); })
      .def_property_readonly("is_floating_point", [](DType dt) { return is_float(dt); });
  m.def("promote_types", &promote_types);
  // A front end's presentation of what _C returns (convert.h).
  m.def("_set_presentation", &set_presentation, py::arg("module"), py::arg("dtypes"), py::arg("missing"));
}

void bind_creation(py::module_ &m) {
  m.def("empty", &Tensor::empty, py::arg("shape"), py::arg("dtype") = DType::Float32);
  m.def("zeros", &Tensor::zeros, py::arg("shape"), py::arg("dtype") = DType::Float32);
  m.def("ones", &Tensor::ones, py::arg("shape"), py::arg("dtype") = DType::Float32);
  m.def("full", &Tensor::full, py::arg("shape"), py::arg("fill_value"), py::arg("dtype") = py::none());
  m.def("arange", py::overload_cast<Scalar, Scalar, Scalar, std::optional<DType>>(&Tensor::arange), py::arg("start"),
        py::arg("end"), py::arg("step") = 1, py::arg("dtype") = py::none());
  m.def("manual_seed", &Tensor::manual_seed, py::arg("seed"));
  m.def("_rng_state", [] {
    const RngState s = rng_state();
    return std::make_pair(s.seed, s.draws);
  });
  m.def("_set_rng_state", [](uint64_t seed, uint64_t draws) { set_rng_state({seed, draws}); });
  m.def("rand", &Tensor::rand, py::arg("shape"), py::arg("dtype") = DType::Float32);
  m.def("randn", &Tensor::randn, py::arg("shape"), py::arg("dtype") = DType::Float32);
  m.def("randint", &Tensor::randint, py::arg("low"), py::arg("high"), py::arg("shape"),
        py::arg("dtype") = DType::Int64);
  m.def("randperm", &Tensor::randperm, py::arg("n"), py::arg("dtype") = DType::Int64);
  m.def("cat", &Tensor::cat, py::arg("tensors"), py::arg("dim") = 0);
  m.def("stack", &Tensor::stack, py::arg("tensors"), py::arg("dim") = 0);
  m.def("from_numpy", &from_numpy, py::arg("array"));
  m.def("device", &backends::device);
  m.def("synchronize", &backends::synchronize);
  m.def("realize_all", [](std::vector<Tensor> ts) { realize_all(ts); }, py::arg("tensors"));
}

void bind_autograd(py::module_ &m) {
  m.def("is_grad_enabled", &autograd::is_grad_enabled);
  m.def("set_grad_enabled", &autograd::set_grad_enabled, py::arg("mode"));
  // torch.autograd.grad: None for an input the outputs do not depend on (allow_unused).
  m.def("grad", [](const std::vector<Tensor> &outputs, const std::vector<Tensor> &inputs,
                   const std::vector<Tensor> &grad_outputs, bool allow_unused, bool retain_graph) {
    std::vector<bool> used;
    const std::vector<Tensor> grads = autograd::grad(outputs, inputs, grad_outputs, allow_unused, &used, retain_graph);
    py::list out;
    for (size_t i = 0; i < grads.size(); i++) out.append(used[i] ? py::cast(grads[i]) : py::none());
    return out;
  }, py::arg("outputs"), py::arg("inputs"), py::arg("grad_outputs") = std::vector<Tensor>{},
        py::arg("allow_unused") = false, py::arg("retain_graph") = false);
  // torch.autograd.backward: the leaves' .grad and the tensors realized in one schedule.
  m.def("backward", &autograd::backward, py::arg("tensors"), py::arg("grad_tensors") = std::vector<Tensor>{},
        py::arg("retain_graph") = false);
  // The Python callables wait in a Python list (leaked, so nothing of Python
  // is destroyed after the interpreter); the engine's queue holds C++ calls
  // that take them in order.
  m.def("queue_callback", [](py::function fn) {
    static auto *queued = new py::list();
    queued->append(std::move(fn));
    autograd::queue_callback([] {
      py::gil_scoped_acquire gil;
      queued->attr("pop")(0)();
    });
  }, py::arg("callback"));
}

void bind_stats(py::module_ &m) {
  m.def("run_stats", [] {
    RunStats s = run_stats();
    py::dict d;
    d["schedules"] = s.schedules;
    d["schedule_hits"] = s.schedule_hits;
    d["donation_checks"] = s.donation_checks;
    d["kernels_run"] = s.kernels_run;
    d["buffers_allocated"] = s.buffers_allocated;
    d["kernels_compiled"] = s.kernels_compiled;
    d["cache_healed"] = s.cache_healed;
    d["work"] = s.work;
    d["work_needed"] = s.work_needed;
    d["realize_seconds"] = s.realize_seconds;
    d["kernel_seconds"] = s.kernel_seconds;
    d["host_writes"] = s.host_writes;
    d["host_write_bytes"] = s.host_write_bytes;
    d["host_reads"] = s.host_reads;
    d["host_read_bytes"] = s.host_read_bytes;
    d["collectives"] = s.collectives;
    d["collective_bytes"] = s.collective_bytes;
    return d;
  });
  m.def("reset_run_stats", &reset_run_stats);
  m.def("memory_stats", [] {
    MemoryStats s = memory_stats();
    py::dict d;
    d["live_buffers"] = s.live_buffers;
    d["live_bytes"] = s.live_bytes;
    d["peak_bytes"] = s.peak_bytes;
    return d;
  });
  m.def("reset_peak_memory", &reset_peak_memory);
}

}  // namespace

}  // namespace loom::python

PYBIND11_MODULE(_C, m) {
  m.doc() = "loom's C++ engine; use it through the loom package";
  loom::python::register_errors();
  loom::python::bind_dtypes(m);
  loom::python::bind_tensor(m);
  loom::python::bind_presented_tensor(m);
  loom::python::bind_creation(m);
  loom::python::bind_autograd(m);
  loom::python::bind_stats(m);
  loom::python::bind_nn(m);
  loom::python::bind_jit(m);
  loom::python::bind_inspect(m);
  loom::python::bind_distributed(m);
}
