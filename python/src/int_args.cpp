// SPDX-License-Identifier: Apache-2.0
// python/src/int_args.cpp — checked integer arguments (int_args.hpp).
#include "int_args.hpp"

#include <cmath>
#include <string>

#include "vgpu/error.hpp"

namespace py = pybind11;

namespace vgpu::python {
namespace {

// "0..4294967295" with 2**64-1 and 2**63-1 written as Python writes them.
std::string bound_text(std::uint64_t v) {
  if (v == std::numeric_limits<std::uint64_t>::max()) return "2**64-1";
  if (v == static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return "2**63-1";
  return std::to_string(v);
}
std::string bound_text(std::int64_t v) {
  if (v == std::numeric_limits<std::int64_t>::min()) return "-2**63";
  return v < 0 ? "-" + bound_text(static_cast<std::uint64_t>(-(v + 1)) + 1) : bound_text(static_cast<std::uint64_t>(v));
}

[[noreturn]] void out_of_range(py::handle value, std::string_view what, const std::string& range) {
  fail(ErrorCategory::invalid_argument,
       std::string(what) + " is " + py::str(value).cast<std::string>() + ", outside " + range + ".",
       "pass an integer in " + range + ".");
}

// obj as a Python int (PyNumber_Index), or InvalidArgument when it is none.
py::object index_of(py::handle obj, std::string_view what, const std::string& range) {
  if (!py::isinstance<py::bool_>(obj) && (py::isinstance<py::int_>(obj) || py::hasattr(obj, "__index__"))) {
    if (PyObject* i = PyNumber_Index(obj.ptr())) return py::reinterpret_steal<py::object>(i);
    PyErr_Clear();
  }
  fail(
      ErrorCategory::invalid_argument,
      std::string(what) + " is a " + py::str(obj.get_type().attr("__name__")).cast<std::string>() + ", not an integer.",
      "pass an integer in " + range + ".");
}

}  // namespace

std::uint64_t uint_arg(py::handle obj, std::string_view what, std::uint64_t min, std::uint64_t max) {
  const std::string range = bound_text(min) + ".." + bound_text(max);
  const py::object i = index_of(obj, what, range);
  // Negative or past 64 bits: PyLong_AsUnsignedLongLong raises (OverflowError), cleared here.
  const unsigned long long v = PyLong_AsUnsignedLongLong(i.ptr());
  if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
    PyErr_Clear();
    out_of_range(i, what, range);
  }
  if (v < min || v > max) out_of_range(i, what, range);
  return v;
}

std::int64_t int_arg(py::handle obj, std::string_view what, std::int64_t min, std::int64_t max) {
  const std::string range = bound_text(min) + ".." + bound_text(max);
  const py::object i = index_of(obj, what, range);
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    out_of_range(i, what, range);
  }
  if (overflow != 0 || v < min || v > max) out_of_range(i, what, range);
  return v;
}

double number_arg(py::handle obj, std::string_view what) {
  if (!py::isinstance<py::bool_>(obj)) {
    if (py::isinstance<py::int_>(obj) || (!py::isinstance<py::float_>(obj) && py::hasattr(obj, "__index__"))) {
      const py::object i = index_of(obj, what, "a number");
      const double v = PyLong_AsDouble(i.ptr());
      if (v == -1.0 && PyErr_Occurred()) {  // past a double's range
        PyErr_Clear();
        return py::int_(0).attr("__lt__")(i).cast<bool>() ? HUGE_VAL : -HUGE_VAL;
      }
      return v;
    }
    if (py::isinstance<py::float_>(obj) || py::hasattr(obj, "__float__")) {
      const double v = PyFloat_AsDouble(obj.ptr());
      if (!(v == -1.0 && PyErr_Occurred())) return v;
      PyErr_Clear();
    }
  }
  fail(ErrorCategory::invalid_argument,
       std::string(what) + " is a " + py::str(obj.get_type().attr("__name__")).cast<std::string>() + ", not a number.",
       "pass a number of seconds.");
}

}  // namespace vgpu::python
