// loom._C.kernels_of: the kernels a realize would run (loom/inspect.h), as
// KernelInfo objects; the `loom.schedule` function wraps it. loom._C.viz_*:
// the viewer's recorder (loom/viz.h), wrapped by `loom.viz`.
#include "convert.h"
#include "loom/inspect.h"
#include "loom/viz.h"

namespace loom::python {

void bind_inspect(py::module_ &m) {
  py::class_<KernelInfo>(m, "KernelInfo")
      .def_readonly("name", &KernelInfo::name)
      .def_readonly("ast", &KernelInfo::ast)
      .def_readonly("program", &KernelInfo::program)
      .def_readonly("c_source", &KernelInfo::c_source)
      .def_readonly("cuda_source", &KernelInfo::cuda_source)
      .def_readonly("cuda_blocks", &KernelInfo::cuda_blocks)
      .def_readonly("cuda_threads", &KernelInfo::cuda_threads)
      .def_readonly("buffers", &KernelInfo::buffers)
      .def_readonly("bound", &KernelInfo::bound)
      .def_readonly("library", &KernelInfo::library)
      .def("__repr__", [](const KernelInfo &k) {
        std::string s = "<kernel " + k.name + " (";
        for (size_t i = 0; i < k.buffers.size(); i++) s += (i ? ", " : "") + k.buffers[i];
        s += ")";
        if (!k.bound.empty()) s += " " + k.bound;
        if (!k.library.empty()) s += " extern " + k.library;
        return s + ">";
      });
  m.def("kernels_of", &kernels_of, py::arg("tensors"));
  m.def("viz_start", &viz::start);
  m.def("viz_stop", &viz::stop);
  m.def("viz_recording", &viz::recording);
  m.def("viz_trace_json", &viz::trace_json);
  m.def("viz_save", &viz::save, py::arg("path"));
}

}  // namespace loom::python
