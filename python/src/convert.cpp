#include "convert.h"

#include <cstring>
#include <iterator>

#include "loom/error.h"

namespace loom::python {

std::optional<Scalar> to_scalar(py::handle h) {
  PyObject *o = h.ptr();
  if (PyBool_Check(o)) return Scalar(o == Py_True);
  if (PyLong_Check(o)) {
    const long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      throw py::type_error("the Python integer " + py::str(h).cast<std::string>() + " does not fit in int64");
    }
    return Scalar(v);
  }
  if (PyFloat_Check(o)) return Scalar(PyFloat_AsDouble(o));
  // numpy scalars (np.int64, np.float32, np.bool_, ...) become Python numbers.
  if (py::isinstance(h, py::module_::import("numpy").attr("generic"))) return to_scalar(h.attr("item")());
  return std::nullopt;
}

py::object from_scalar(const Scalar &s) {
  switch (s.kind) {
    case Scalar::Kind::Bool: return py::bool_(s.i != 0);
    case Scalar::Kind::Int: return py::int_(s.i);
    default: return py::float_(s.f);
  }
}

namespace {

// A Python number as a Scalar; a TypeError naming what else it is.
Scalar number(py::handle h) {
  if (auto s = to_scalar(h)) return *s;
  throw py::type_error("expected a Tensor or a number, got " +
                       py::str(py::type::handle_of(h).attr("__name__")).cast<std::string>());
}

}  // namespace

Tensor operand(const Tensor &like, py::handle other) {
  if (py::isinstance<Tensor>(other)) return other.cast<Tensor>();
  const Scalar s = number(other);
  return Tensor::full(like.shape(), s, result_type(like.dtype(), s));
}

Tensor scalar_tensor(py::handle h) {
  const Scalar s = number(h);
  // torch's dtype of a Python number: bool, int64, or the default float32.
  const DType dt = s.kind == Scalar::Kind::Bool  ? DType::Bool
                   : s.kind == Scalar::Kind::Int ? DType::Int64
                                                 : DType::Float32;
  return Tensor::full({}, s, dt);
}

py::dtype numpy_dtype(DType dt) {
  switch (dt) {
    case DType::Bool: return py::dtype("bool");
    case DType::UInt8: return py::dtype("uint8");
    case DType::Int8: return py::dtype("int8");
    case DType::Int16: return py::dtype("int16");
    case DType::Int32: return py::dtype("int32");
    case DType::Int64: return py::dtype("int64");
    case DType::Float16: return py::dtype("float16");
    case DType::Float32: return py::dtype("float32");
    case DType::Float64: return py::dtype("float64");
    case DType::BFloat16: break;
  }
  throw TypeError("Got unsupported ScalarType BFloat16: numpy has no bfloat16");
}

DType from_numpy_dtype(const py::dtype &dt) {
  for (DType d : kAllDTypes)
    if (d != DType::BFloat16 && numpy_dtype(d).is(dt)) return d;
  for (DType d : kAllDTypes)
    if (d != DType::BFloat16 && numpy_dtype(d).equal(dt)) return d;
  throw TypeError("can't convert np.ndarray of type " + py::str(py::handle(dt)).cast<std::string>() +
                  ". The only supported types are: float64, float32, float16, int64, int32, int16, int8, uint8, "
                  "and bool.");
}

py::array to_numpy(const Tensor &t) {
  const py::dtype dt = numpy_dtype(t.dtype());
  HostTensor h = t.to_host();  // row-major
  auto owner = new std::shared_ptr<std::vector<uint8_t>>(h.storage);
  py::capsule keep(owner, [](void *p) { delete static_cast<std::shared_ptr<std::vector<uint8_t>> *>(p); });
  std::vector<py::ssize_t> strides;
  for (int64_t s : h.strides) strides.push_back(static_cast<py::ssize_t>(s * itemsize(h.dtype)));
  const uint8_t *data = h.storage->data() + h.offset * itemsize(h.dtype);
  return py::array(dt, std::vector<py::ssize_t>(h.shape.begin(), h.shape.end()), strides, data, keep);
}

Tensor from_numpy(const py::array &a) {
  const DType dt = from_numpy_dtype(a.dtype());
  py::array c = py::array::ensure(a, py::array::c_style);
  Shape shape(c.shape(), c.shape() + c.ndim());
  HostTensor h = HostTensor::contiguous(dt, shape);
  if (!h.storage->empty()) std::memcpy(h.storage->data(), c.data(), h.storage->size());
  return Tensor::from_host(h);
}

void register_errors() {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const IndexError &e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const ValueError &e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const TypeError &e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const Error &e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (const InternalError &e) {
      PyErr_SetString(PyExc_RuntimeError, (std::string("loom internal error: ") + e.what()).c_str());
    }
  });
}

namespace {
struct Presentation {
  bool on = false;
  py::object dtypes[std::size(kAllDTypes)];  // per DType: the object to return
  py::object missing;                        // missing(tensor, name)
};
Presentation &presentation() {
  static auto *p = new Presentation();  // never destroyed: its objects outlive the interpreter's teardown
  return *p;
}
}  // namespace

void set_presentation(py::object module, py::object dtypes, py::object missing) {
  Presentation next;
  next.on = !module.is_none();
  if (next.on) {
    if (!py::isinstance<py::str>(module) || !PyCallable_Check(missing.ptr()))
      throw TypeError("_set_presentation: expected a module name, a dict of dtypes and a callable");
    for (DType dt : kAllDTypes) {
      py::object o = dtypes[py::str(dtype_name(dt))];
      if (!py::isinstance(o, py::type::of<DType>()) || o.cast<DType>() != dt)
        throw TypeError(std::string("_set_presentation: the object for ") + dtype_name(dt) +
                        " must be a loom.dtype of that value");
      next.dtypes[static_cast<size_t>(dt)] = std::move(o);
    }
    next.missing = std::move(missing);
  }
  py::type::of<PresentedTensor>().attr("__module__") = next.on ? module : py::str("loom._C");
  presentation() = std::move(next);
}

bool presenting() { return presentation().on; }

py::handle presented(DType dt) { return presentation().dtypes[static_cast<size_t>(dt)]; }

void bind_presented_tensor(py::module_ &m) {
  py::class_<PresentedTensor, Tensor> p(m, "PresentedTensor");
  p.def(py::init<>()).def(py::init<const Tensor &>(), py::arg("other"));
  p.def("__getattr__", [](py::handle self, const std::string &name) -> py::object {
    const Presentation &pr = presentation();
    if (!pr.on) throw py::attribute_error("'Tensor' object has no attribute '" + name + "'");
    return pr.missing(self, name);
  });
  p.attr("__qualname__") = "Tensor";
  p.attr("__name__") = "Tensor";
}

}  // namespace loom::python
