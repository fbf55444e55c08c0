// SPDX-License-Identifier: Apache-2.0
// python/src/arrays.cpp — numpy arrays in and out of vgpu calls (rules in arrays.hpp).
#include "arrays.hpp"

#include "vgpu/half.hpp"

#include <cstdint>
#include <string>

#include "vgpu/error.hpp"
#include "vgpu/half.hpp"

namespace py = pybind11;

namespace vgpu::python {
namespace {

// str(h) as a std::string.
std::string text(py::handle h) { return py::str(h).cast<std::string>(); }

std::string describe(py::handle obj) {
  if (py::isinstance<py::array>(obj)) {
    const py::array a = py::reinterpret_borrow<py::array>(obj);
    return "a numpy array of dtype " + text(a.dtype()) + " and shape " + text(obj.attr("shape"));
  }
  return "a " + text(obj.get_type().attr("__name__"));
}

// Numeric kinds numpy converts to d without losing the meaning of the values: signed and
// unsigned integers and floats ('b' bool, 'c' complex, 'O' object, 'U'/'S' text, 'M'/'m' dates are not).
bool convertible_kind(char kind) { return kind == 'f' || kind == 'i' || kind == 'u'; }

}  // namespace

const char* np_name(DType d) { return vgpu::numpy_name(d).data(); }

py::dtype numpy_dtype(DType d) {
  if (d == DType::bf16)
    fail(ErrorCategory::invalid_argument, "numpy has no bfloat16 dtype to hold vgpu's bf16 values.",
         "Read its bit patterns as uint16 (arr.numpy(bits=True)), or exchange it through DLPack (torch.bfloat16).");
  // numpy's own descriptors, by type number: py::dtype("float32") parses the name in Python
  // (np.dtype(...)), a tenth of a small Cache.matmul call once each result array needed one.
  switch (d) {
    case DType::f32:
      return py::dtype::of<float>();
    case DType::f64:
      return py::dtype::of<double>();
    case DType::i32:
      return py::dtype::of<std::int32_t>();
    case DType::u32:
      return py::dtype::of<std::uint32_t>();
    case DType::i8:
      return py::dtype::of<std::int8_t>();
    case DType::u8:
      return py::dtype::of<std::uint8_t>();
    default:  // float16 has no C++ type for pybind11 to map
      return py::dtype(std::string(vgpu::numpy_name(d)));
  }
}

py::dtype host_dtype(DType d) { return d == DType::bf16 ? py::dtype::of<std::uint16_t>() : numpy_dtype(d); }

std::optional<DType> find_vgpu_dtype(const py::dtype& dt) {
  // By kind and size, so any byte order spelling of a native type matches ('<f4', 'float32').
  const char kind = dt.kind();
  const auto size = static_cast<std::size_t>(dt.itemsize());
  if (dt.byteorder() == '>') return std::nullopt;  // big-endian data would be read wrongly
  for (DType d : {DType::f32, DType::i32, DType::u32, DType::f64, DType::i8, DType::u8, DType::f16})
    if (dtype_size(d) == size && kind == (is_float(d) ? 'f' : (d == DType::i32 || d == DType::i8) ? 'i' : 'u'))
      return d;
  return std::nullopt;
}

DType vgpu_dtype(const py::dtype& dt, std::string_view what) {
  if (auto d = find_vgpu_dtype(dt)) return *d;
  fail(ErrorCategory::invalid_argument, std::string(what) + " has dtype " + text(dt) + ", which vgpu does not hold.",
       "Use float32, float64, float16, int32, uint32, int8 or uint8 (e.g. numpy.asarray(x, dtype=numpy.float32)).");
}

namespace {

// obj as bfloat16 bits (a uint16 array): a uint16 array is taken as the bits themselves (numpy
// has no bfloat16); any other numeric input is read as float32 and rounded to nearest even.
py::array bf16_input(py::handle obj, std::string_view what) {
  if (py::isinstance<py::array>(obj)) {
    py::array a = py::reinterpret_borrow<py::array>(obj);
    if (a.dtype().kind() == 'u' && a.itemsize() == 2) {  // the bits (in native byte order, C-contiguous)
      if (a.dtype().equal(py::dtype::of<std::uint16_t>()) && (a.flags() & py::array::c_style)) return a;
      return py::array(py::module_::import("numpy").attr("ascontiguousarray")(a, py::dtype::of<std::uint16_t>()));
    }
  }
  const py::array f = input_array(obj, DType::f32, what);
  std::vector<py::ssize_t> dims(f.shape(), f.shape() + f.ndim());
  py::array bits(py::dtype::of<std::uint16_t>(), dims);
  const auto* in = static_cast<const float*>(f.data());
  auto* out = static_cast<std::uint16_t*>(bits.mutable_data());
  for (py::ssize_t i = 0; i < f.size(); ++i) out[i] = float_to_bf16_bits(in[i]);
  return bits;
}

}  // namespace

py::array input_array(py::handle obj, DType d, std::string_view what) {
  if (obj.is_none())
    fail(ErrorCategory::invalid_argument, std::string(what) + " is None.",
         std::string("Pass a numpy array (or array-like) of ") + np_name(d) + " values.");
  if (d == DType::bf16) return bf16_input(obj, what);
  const py::dtype want = numpy_dtype(d);
  if (py::isinstance<py::array>(obj)) {
    py::array a = py::reinterpret_borrow<py::array>(obj);
    if (a.dtype().equal(want) && (a.flags() & py::array::c_style)) return a;  // zero-copy
    const char kind = a.dtype().kind();
    if (!convertible_kind(kind))
      fail(ErrorCategory::invalid_argument,
           std::string(what) + " is " + describe(obj) + "; vgpu does not convert " +
               (kind == 'b'   ? "bool"
                : kind == 'c' ? "complex"
                              : "non-numeric") +
               " arrays to " + np_name(d) + ".",
           std::string("Convert it yourself (e.g. ") + std::string(what) + ".astype(numpy." + np_name(d) +
               ")) or pass a real numeric array.");
  }
  // One conversion, numpy's own (as py::array_t<T, c_style | forcecast> does), which also
  // takes lists, tuples and scalars.
  auto& api = py::detail::npy_api::get();
  PyObject* converted =
      api.PyArray_FromAny_(obj.ptr(), py::dtype(want).release().ptr(), 0, 0,
                           static_cast<int>(py::detail::npy_api::NPY_ARRAY_ENSUREARRAY_) |
                               static_cast<int>(py::array::c_style) | static_cast<int>(py::array::forcecast),
                           nullptr);
  if (!converted) {
    py::error_already_set numpy_error;
    fail(ErrorCategory::invalid_argument,
         std::string(what) + " (" + describe(obj) + ") cannot be read as a " + np_name(d) +
             " array: " + numpy_error.what(),
         std::string("Pass a numpy array (or nested lists) of numbers, e.g. numpy.asarray(x, dtype=numpy.") +
             np_name(d) + ").");
  }
  return py::reinterpret_steal<py::array>(converted);
}

py::array output_array(py::handle obj, DType d, std::string_view what) {
  const std::string dtn = d == DType::bf16 ? "uint16" : np_name(d);  // bf16 results are written as their bits
  if (!py::isinstance<py::array>(obj))
    fail(ErrorCategory::invalid_argument,
         std::string(what) + " is an output but " + describe(obj) + " is not a numpy array vgpu can write into.",
         "Pass a writeable numpy array, e.g. numpy.empty(shape, dtype=numpy." + dtn + ").");
  py::array a = py::reinterpret_borrow<py::array>(obj);
  if (!a.dtype().equal(host_dtype(d)))
    fail(ErrorCategory::invalid_argument,
         std::string(what) + " is an output of dtype " + text(a.dtype()) + " but the kernel writes " + dtn +
             (d == DType::bf16 ? " (bfloat16 bits)" : "") + " (outputs are never converted).",
         "Pass an array of dtype " + dtn + ", e.g. numpy.empty(shape, dtype=numpy." + dtn + ").");
  if (!(a.flags() & py::array::c_style))
    fail(ErrorCategory::invalid_argument,
         std::string(what) +
             " is an output but not C-contiguous (a transposed or sliced view); vgpu writes "
             "results straight into the array's memory.",
         "Pass a C-contiguous array (numpy.ascontiguousarray, or numpy.empty(shape, dtype=numpy." + dtn +
             ")) and copy it into the view afterwards.");
  if (!a.writeable())
    fail(ErrorCategory::invalid_argument, std::string(what) + " is an output but the array is read-only.",
         "Pass a writeable array (e.g. numpy.empty(shape, dtype=numpy." + dtn + ") or arr.copy()).");
  return a;
}

Shape shape_of(const py::array& a) {
  Shape shape(static_cast<std::size_t>(a.ndim()));
  for (py::ssize_t i = 0; i < a.ndim(); ++i)
    shape[static_cast<std::size_t>(i)] = static_cast<std::uint64_t>(a.shape(i));
  return shape;
}

py::array new_array(DType d, const Shape& shape) {
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  return py::array(host_dtype(d), dims);
}

}  // namespace vgpu::python
