// Conversions between Python values and loom's C++ types, shared by the
// binding files: Python numbers as loom::Scalar (bool before int, since bool
// is an int in Python; numpy scalars through .item()), numpy arrays to and
// from tensors, and loom's errors as the exceptions torch raises.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <typeinfo>

#include "loom/tensor.h"

namespace loom::python {

namespace py = pybind11;

// The Python number as a Scalar, or nullopt when it is not one.
std::optional<Scalar> to_scalar(py::handle h);
py::object from_scalar(const Scalar &s);

// A tensor or a Python number: a number becomes a tensor of `like`'s shape
// (one broadcast runtime scalar, as the C++ scalar ops make it) of the dtype
// torch computes with it beside `like` (torch.result_type(like, number)).
Tensor operand(const Tensor &like, py::handle other);
// A Python number as a 0-d tensor of torch's dtype for it (bool, int64, float32).
Tensor scalar_tensor(py::handle number);

// numpy dtype <-> loom dtype. bfloat16 has no numpy dtype: a TypeError, as
// torch raises for it.
py::dtype numpy_dtype(DType dt);
DType from_numpy_dtype(const py::dtype &dt);

// A row-major numpy array owning a copy of the tensor's values.
py::array to_numpy(const Tensor &t);
// A tensor with a copy of the array's values (any strides).
Tensor from_numpy(const py::array &a);

void register_errors();

// How _C presents the tensors and dtypes it returns: by default as
// loom.Tensor instances and loom.dtype values. A front end such as the torch
// shim may turn on a presentation: every tensor _C returns is then a
// PresentedTensor (_C.PresentedTensor, a subclass of loom.Tensor the front
// end names, e.g. torch.Tensor, whose missing attributes its handler reports)
// and every dtype the front end's object for it. loom.Tensor and loom.dtype
// themselves are left as they are.
struct PresentedTensor : Tensor {
  PresentedTensor() = default;
  explicit PresentedTensor(const Tensor &t) : Tensor(t) {}
  explicit PresentedTensor(Tensor &&t) : Tensor(std::move(t)) {}
};
// `module`: the class's __module__; `dtypes`: dtype name -> an instance of a
// loom.dtype subclass of that value; `missing(tensor, name)`: what reading a
// missing attribute of a presented tensor does. All None: the defaults again.
void set_presentation(py::object module, py::object dtypes, py::object missing);
bool presenting();
py::handle presented(DType dt);  // the dtype object to return; null: the default
void bind_presented_tensor(py::module_ &m);

}  // namespace loom::python

namespace pybind11::detail {

// loom::Tensor and DType as pybind11 casts them, through the presentation
// (loom::python::set_presentation) when a front end turned one on.
template <>
struct type_caster<loom::Tensor> : type_caster_base<loom::Tensor> {
  static handle cast(const loom::Tensor &t, return_value_policy policy, handle parent) {
    if (loom::python::presenting()) {
      // A tensor that has a Python object already (a method returning self)
      // returns that object, as pybind11 does: a loom.Tensor or a presented one.
      void *src = const_cast<loom::Tensor *>(&t);
      for (const std::type_info *as : {&typeid(loom::Tensor), &typeid(loom::python::PresentedTensor)})
        if (handle existing = find_registered_python_instance(src, get_type_info(*as))) return existing;
      return present(loom::python::PresentedTensor(t), parent);
    }
    return type_caster_base<loom::Tensor>::cast(t, policy, parent);
  }
  static handle cast(loom::Tensor &&t, return_value_policy policy, handle parent) {
    if (loom::python::presenting()) return present(loom::python::PresentedTensor(std::move(t)), parent);
    return type_caster_base<loom::Tensor>::cast(std::move(t), policy, parent);
  }
  static handle cast(const loom::Tensor *t, return_value_policy policy, handle parent) {
    return type_caster_base<loom::Tensor>::cast(t, policy, parent);  // by reference: the existing object
  }

 private:
  static handle present(loom::python::PresentedTensor &&t, handle parent) {
    return type_caster_base<loom::python::PresentedTensor>::cast(std::move(t), return_value_policy::move, parent);
  }
};

template <>
struct type_caster<loom::DType> : type_caster_base<loom::DType> {
  static handle cast(loom::DType dt, return_value_policy policy, handle parent) {
    if (handle h = loom::python::presented(dt)) return h.inc_ref();
    return type_caster_base<loom::DType>::cast(dt, policy, parent);
  }
  static handle cast(const loom::DType *dt, return_value_policy policy, handle parent) {
    if (dt)
      if (handle h = loom::python::presented(*dt)) return h.inc_ref();
    return type_caster_base<loom::DType>::cast(dt, policy, parent);
  }
};

template <>
struct type_caster<loom::Scalar> {
 public:
  static constexpr auto name = const_name("Number");
  bool load(handle src, bool) {
    auto s = loom::python::to_scalar(src);
    if (s) value = *s;
    return s.has_value();
  }
  static handle cast(const loom::Scalar &s, return_value_policy, handle) {
    return loom::python::from_scalar(s).release();
  }
  operator loom::Scalar *() { return &value; }
  operator loom::Scalar &() { return value; }
  operator loom::Scalar &&() && { return std::move(value); }
  template <typename T>
  using cast_op_type = movable_cast_op_type<T>;

 private:
  loom::Scalar value{0};
};

}  // namespace pybind11::detail
