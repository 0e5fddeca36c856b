// loom._C.Jit: loom::Jit (loom/jit.h) over a Python callable. The `loom.jit`
// package wraps it (python/loom/jit.py) to sort a call's arguments into
// tensors, scalars and baked values.
#include "convert.h"
#include "loom/jit.h"

namespace loom::python {

void bind_jit(py::module_ &m) {
  py::class_<Jit>(m, "Jit")
      .def(py::init([](py::function fn, std::string name) {
             // fn(tensors, scalars) -> list of tensors
             return std::make_unique<Jit>(
                 [fn](const JitArgs &a) { return fn(a.tensors, a.scalars).cast<std::vector<Tensor>>(); },
                 std::move(name));
           }),
           py::arg("fn"), py::arg("name") = "jit")
      .def("__call__", &Jit::operator(), py::arg("tensors"), py::arg("scalars") = std::vector<double>{},
           py::arg("baked") = std::vector<double>{})
      .def("reset", &Jit::reset)
      .def_property_readonly("info", [](const Jit &j) {
        const Jit::Info i = j.info();
        py::dict d;
        d["calls"] = i.calls;
        d["captured"] = i.captured;
        d["kernels"] = i.kernels;
        d["host_steps"] = i.host_steps;
        d["planned_bytes"] = i.planned_bytes;
        d["intermediate_bytes"] = i.intermediate_bytes;
        d["peak_live_bytes"] = i.peak_live_bytes;
        return d;
      });
  m.def("jit_enabled", &jit_enabled);
}

}  // namespace loom::python
