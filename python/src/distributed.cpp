// loom._C.distributed: the default process group (loom/distributed.h), which
// the shim's torch.distributed presents as torch's.
#include "convert.h"
#include "loom/distributed.h"

namespace loom::python {

void bind_distributed(py::module_ &m) {
  namespace dist = loom::distributed;
  py::module_ d = m.def_submodule("distributed", "The default process group (loom/distributed.h)");
  py::enum_<dist::ReduceOp>(d, "ReduceOp")
      .value("SUM", dist::ReduceOp::Sum)
      .value("AVG", dist::ReduceOp::Avg)
      .value("PRODUCT", dist::ReduceOp::Product)
      .value("MIN", dist::ReduceOp::Min)
      .value("MAX", dist::ReduceOp::Max);
  py::class_<dist::Work>(d, "Work")
      .def("is_completed", &dist::Work::completed)
      .def("wait", &dist::Work::wait);
  d.def("init", &dist::init, py::arg("backend"), py::arg("world_size") = -1, py::arg("rank") = -1);
  d.def("is_initialized", &dist::initialized);
  d.def("get_backend", &dist::backend);
  d.def("get_rank", &dist::rank);
  d.def("get_world_size", &dist::world_size);
  d.def("destroy", &dist::destroy);
  d.def("missing", &dist::missing, py::arg("backend"));
  d.def("all_reduce", &dist::all_reduce, py::arg("tensor"), py::arg("op") = dist::ReduceOp::Sum,
        py::arg("async_op") = false);
  d.def("broadcast", &dist::broadcast, py::arg("tensor"), py::arg("src"), py::arg("async_op") = false);
  d.def("all_gather", &dist::all_gather, py::arg("tensor"), py::arg("async_op") = false);
  d.def("reduce_scatter", &dist::reduce_scatter, py::arg("tensor"), py::arg("op") = dist::ReduceOp::Sum,
        py::arg("async_op") = false);
  d.def("barrier", &dist::barrier);
}

}  // namespace loom::python
