// SPDX-License-Identifier: Apache-2.0
// python/src/errors.cpp — vgpu.Error and its per-category subclasses.
#include "errors.hpp"

#include <array>
#include <string>

#include "bindings.hpp"

namespace py = pybind11;

namespace vgpu::python {
namespace {

// One Python class per ErrorCategory (in the enum's order), plus the base vgpu.Error. Created
// once at import and never freed (the module's own references keep them alive anyway).
struct CategoryClass {
  ErrorCategory category;
  const char* name;   // the attribute in module vgpu
  PyObject* builtin;  // a second base where a built-in exception means the same, else null
  const char* doc;
};

constexpr int kCategories = 9;
PyObject* g_base = nullptr;
std::array<PyObject*, kCategories> g_classes{};

std::array<CategoryClass, kCategories> categories() {
  return {{
      {ErrorCategory::invalid_argument, "InvalidArgument", PyExc_ValueError,
       "The caller passed something wrong: a shape, size, dtype, slot or a missing value."},
      {ErrorCategory::not_supported, "NotSupported", nullptr, "The device or backend cannot do what was asked."},
      {ErrorCategory::compile_error, "CompileError", nullptr,
       "A kernel's source failed to compile; the message carries the compiler's log."},
      {ErrorCategory::out_of_memory, "OutOfMemory", PyExc_MemoryError, "A host or device allocation failed."},
      {ErrorCategory::device_lost, "DeviceLost", nullptr,
       "The device stopped working; its next call recreates it (vgpu recovers it in place)."},
      {ErrorCategory::io, "IoError", PyExc_OSError, "A file or directory operation failed (e.g. the cache directory)."},
      {ErrorCategory::unavailable, "Unavailable", nullptr, "A backend, driver or device is missing on this machine."},
      {ErrorCategory::internal, "InternalError", nullptr, "A vgpu bug; please report it with the message."},
      {ErrorCategory::timeout, "Timeout", PyExc_TimeoutError,
       "A call ran past its time limit (VGPU_TIMEOUT_MS, the device's or the call's own)."},
  }};
}

}  // namespace

py::handle exception_class(ErrorCategory category) {
  const auto i = static_cast<std::size_t>(category);
  return i < g_classes.size() && g_classes[i] ? py::handle(g_classes[i]) : py::handle(g_base);
}

void raise_error(const Error& e) {
  py::handle type = exception_class(e.category());
  // The instance carries the parts separately so callers need not parse str(e).
  py::object instance = type(py::str(e.what()));
  instance.attr("category") = py::str(std::string(to_string(e.category())));
  instance.attr("problem") = py::str(e.problem());
  instance.attr("fix") = py::str(e.fix());
  PyErr_SetObject(type.ptr(), instance.ptr());
}

void bind_errors(py::module_& m) {
  g_base = PyErr_NewExceptionWithDoc(
      "vgpu.Error",
      "Every failure vgpu reports. str(e) reads '<problem> Fix: <hint>'; .category is the C++ "
      "ErrorCategory's name (e.g. 'invalid_argument'), .problem the statement alone, .fix the hint alone.",
      PyExc_RuntimeError, nullptr);
  if (!g_base) throw py::error_already_set();
  m.attr("Error") = py::handle(g_base);
  for (const CategoryClass& c : categories()) {
    const std::string qualified = std::string("vgpu.") + c.name;
    // py::tuple(...) on both arms: pybind11 3 types make_tuple's result by its arguments.
    py::tuple bases = c.builtin ? py::tuple(py::make_tuple(py::handle(g_base), py::handle(c.builtin)))
                                : py::tuple(py::make_tuple(py::handle(g_base)));
    PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), c.doc, bases.ptr(), nullptr);
    if (!cls) throw py::error_already_set();
    g_classes[static_cast<std::size_t>(c.category)] = cls;
    m.attr(c.name) = py::handle(cls);
  }
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      raise_error(e);
    }
  });
}

}  // namespace vgpu::python
