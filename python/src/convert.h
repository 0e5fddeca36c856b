// Conversions between Python values and loom's C++ types, shared by the
// binding files: Python numbers as loom::Scalar (bool before int, since bool
// is an int in Python; numpy scalars through .item()), numpy arrays to and
// from tensors, and loom's errors as the exceptions torch raises.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

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

}  // namespace loom::python

namespace pybind11::detail {

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
