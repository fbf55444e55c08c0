// SPDX-License-Identifier: Apache-2.0
// python/src/array.cpp — vgpu.Array, vgpu.asarray/empty/zeros/from_dlpack and the ops on arrays
// (vgpu.matmul with numpy's rules, add, multiply, axpy, sum, softmax_rows).
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "array_interop.hpp"
#include "arrays.hpp"
#include "bindings.hpp"
#include "device_arg.hpp"
#include "vgpu/array_ops.hpp"
#include "vgpu/error.hpp"
#include "vgpu/runtime.hpp"

namespace py = pybind11;

namespace vgpu::python {
namespace {

std::optional<Device> optional_device(py::handle obj) {
  if (obj.is_none()) return std::nullopt;
  return device_arg(obj);
}

// The device an argument names, or the default device for None.
Device device_or_default(py::handle obj) {
  if (obj.is_none()) return Runtime::global().default_device();
  return device_arg(obj);
}

std::optional<DType> optional_dtype(py::handle obj) {
  if (obj.is_none()) return std::nullopt;
  return dtype_arg(obj, "dtype");
}

CopyMode copy_mode(py::handle obj) {
  if (obj.is_none()) return CopyMode::if_needed;
  return obj.cast<bool>() ? CopyMode::always : CopyMode::never;
}

Shape shape_arg(py::handle obj) {
  Shape s;
  if (py::isinstance<py::int_>(obj)) {
    const long long v = obj.cast<long long>();
    if (v < 0) fail(ErrorCategory::invalid_argument, "shape has a negative dimension.", "pass dimensions ≥ 0.");
    return {static_cast<std::uint64_t>(v)};
  }
  for (py::handle d : obj) {
    const long long v = d.cast<long long>();
    if (v < 0) fail(ErrorCategory::invalid_argument, "shape has a negative dimension.", "pass dimensions ≥ 0.");
    s.push_back(static_cast<std::uint64_t>(v));
  }
  return s;
}

py::tuple shape_tuple(const Shape& s) {
  py::tuple t(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) t[i] = s[i];
  return t;
}

const char* memory_name(ArrayMemory m) {
  return m == ArrayMemory::host ? "host" : m == ArrayMemory::cuda_device ? "cuda_device" : "device_only";
}

// typestr of numpy's array interfaces ('<f4'); bf16 has none.
std::string typestr(DType d) {
  const char kind = is_float(d) ? 'f' : (d == DType::i32 || d == DType::i8) ? 'i' : 'u';
  const std::size_t size = dtype_size(d);
  return std::string(size == 1 ? "|" : "<") + kind + std::to_string(size);
}

py::dict array_interface(const Array& a, bool cuda) {
  py::dict d;
  d["shape"] = shape_tuple(a.shape());
  d["typestr"] = typestr(a.dtype());
  d["data"] = py::make_tuple(reinterpret_cast<std::uintptr_t>(a.data()), false);
  d["strides"] = py::none();
  d["version"] = 3;
  if (cuda) d["stream"] = py::none();  // synchronized before it was handed out
  return d;
}

// Runs an op with the GIL released (ops submit device work and may wait for memory).
template <class F>
auto released(F&& f) {
  py::gil_scoped_release release;
  return f();
}

// The device of the first vgpu.Array among the operands, if any.
std::optional<Device> array_device(std::initializer_list<py::handle> operands) {
  for (py::handle x : operands)
    if (py::isinstance<Array>(x)) return x.cast<const Array&>().device();
  return std::nullopt;
}

}  // namespace

py::array matmul_output(py::handle out, const Shape& shape, DType dtype, const char* op) {
  if (out.is_none()) return new_array(dtype, shape);
  py::array result = output_array(out, dtype, "out");
  if (shape_of(result) != shape)
    fail(ErrorCategory::invalid_argument,
         std::string(op) + ": out has shape " + to_string(shape_of(result)) + " but A @ B has shape " +
             to_string(shape) + ".",
         "pass out=numpy.empty(" + to_string(shape) + ", dtype=numpy." +
             py::str(host_dtype(dtype)).cast<std::string>() + "), or leave out=None.");
  return result;
}

// np.matmul on host data or arrays: shared by vgpu.matmul and Cache.matmul's stacked case.
ops::Precision precision_arg(py::handle precision) {
  if (precision.is_none()) return ops::Precision::highest;
  // Compared in place: Cache.matmul's hot path passes the default "highest" on every call.
  if (PyUnicode_Check(precision.ptr()) && PyUnicode_CompareWithASCIIString(precision.ptr(), "highest") == 0)
    return ops::Precision::highest;
  if (!py::isinstance<py::str>(precision))
    fail(ErrorCategory::invalid_argument,
         "precision must be a str, not " + py::str(py::type::of(precision).attr("__name__")).cast<std::string>() + ".",
         "pass precision=\"highest\" (the default) or precision=\"tf32\".");
  return ops::parse_precision(precision.cast<std::string>());
}

py::object matmul_any(py::handle a_obj, py::handle b_obj, py::handle out, py::handle dtype,
                      std::optional<Device> device, const char* op, ops::Precision precision) {
  const std::optional<Device> on_arrays = array_device({a_obj, b_obj});
  const DType compute = matmul_compute_dtype(a_obj, b_obj, dtype, op);
  const Device dev = on_arrays ? *on_arrays : device ? *device : Runtime::global().default_device();
  if (device && on_arrays && !(*device == *on_arrays))
    fail(ErrorCategory::invalid_argument,
         std::string(op) + ": device= is " + device->info().id() + " but the arrays are on " + on_arrays->info().id() +
             ".",
         "leave device= out for arrays (they run where they are), or move them with .to(device).");
  auto operand = [&](py::handle x, const char* name) {
    if (py::isinstance<Array>(x)) return array_arg(x, dev, compute, CopyMode::if_needed, name);
    return host_array(x, dev, compute, CopyMode::if_needed, name);
  };
  const Array a = operand(a_obj, "A"), b = operand(b_obj, "B");
  const Shape shape = matmul_shape(a.shape(), b.shape());
  if (on_arrays) {
    if (out.is_none()) return py::cast(released([&] { return matmul(a, b, precision); }));
    const Array& o = out.cast<const Array&>();
    released([&] {
      matmul(a, b, o, precision);
      return 0;
    });
    return py::reinterpret_borrow<py::object>(out);
  }
  // Host in, host out: the result goes into a numpy array (out= or a new one), written in
  // place where the device uses host memory.
  py::array result = matmul_output(out, shape, compute, op);
  if (element_count(shape) == 0) return result;
  const Array c = Array::uses_host_memory(dev) ? host_array(result, dev, compute, CopyMode::never, "out")
                                               : Array::empty(dev, compute, shape);
  void* target = result.mutable_data();
  released([&] {
    matmul(a, b, c, precision);
    if (c.memory() != ArrayMemory::host || c.data() != target) c.read(target);
    return 0;
  });
  return result;
}

void bind_arrays(py::module_& m) {
  py::class_<Array>(
      m, "Array",
      "A dense, C-contiguous n-d array on one vgpu device (docs/arrays.md). Ops on arrays (vgpu.matmul, "
      "vgpu.add, @, +, *) run where the arrays are and return arrays there: nothing moves to the host until "
      ".numpy() or numpy.asarray(arr). On cpu:0 an array made from a numpy array uses numpy's memory in place "
      "(zero-copy). Moving between devices is explicit: arr.to(device). DLPack: vgpu.from_dlpack(x), "
      "numpy.from_dlpack(arr), torch.from_dlpack(arr) (host and CUDA memory).")
      .def_property_readonly(
          "shape", [](const Array& a) { return shape_tuple(a.shape()); }, "The dimensions.")
      .def_property_readonly(
          "dtype", [](const Array& a) { return dtype_object(a.dtype()); },
          "The element type (a numpy dtype; the string 'bfloat16' for bf16).")
      .def_property_readonly("ndim", &Array::ndim, "The number of dimensions.")
      .def_property_readonly("size", &Array::size, "The number of elements.")
      .def_property_readonly("nbytes", &Array::nbytes, "The bytes the elements take.")
      .def_property_readonly(
          "device", [](const Array& a) { return device_object(a.device()); }, "The vgpu.Device the array lives on.")
      .def_property_readonly(
          "memory", [](const Array& a) { return memory_name(a.memory()); },
          "Where the elements are: 'host' (cpu devices), 'cuda_device', or 'device_only' "
          "(Vulkan, OpenGL memory, reachable through .numpy() only).")
      .def_property_readonly(
          "data_ptr",
          [](const Array& a) -> py::object {
            void* p = a.data();
            if (!p) return py::none();
            return py::int_(reinterpret_cast<std::uintptr_t>(p));
          },
          "The address of the first element (host or CUDA device memory), or None.")
      .def_property_readonly("external", &Array::external,
                             "True when the array uses memory it was given (numpy's, a DLPack producer's) in place.")
      .def("__len__",
           [](const Array& a) {
             if (a.ndim() == 0) throw py::type_error("len() of a 0-d vgpu.Array");
             return a.shape()[0];
           })
      .def("numpy", &numpy_of, py::arg("bits") = false,
           "numpy(bits=False) -> numpy.ndarray\n\n"
           "Returns the elements as a numpy array: a view of the array's memory when it is host memory (cpu), "
           "else a copy read back from the device. numpy has no bfloat16: a bfloat16 array is refused unless "
           "bits=True, which returns its bit patterns as uint16 (the form vgpu.asarray(x, dtype=\"bfloat16\") "
           "takes).")
      .def(
          "__array__",
          [](const Array& a, py::object dtype, py::object copy) {
            py::array r = numpy_of(a, false);
            if (!dtype.is_none()) return py::array(r.attr("astype")(dtype));
            if (!copy.is_none() && copy.cast<bool>() && a.memory() == ArrayMemory::host)
              return py::array(r.attr("copy")());
            return r;
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def_property_readonly(
          "__array_interface__",
          [](const Array& a) {
            if (a.memory() != ArrayMemory::host || a.dtype() == DType::bf16)
              throw py::attribute_error("__array_interface__: the array is not in host memory numpy can read");
            settle(a);
            return array_interface(a, false);
          },
          "numpy's array interface over the array's host memory (cpu arrays; zero-copy).")
      .def_property_readonly(
          "__cuda_array_interface__",
          [](const Array& a) {
            if (a.memory() != ArrayMemory::cuda_device || a.dtype() == DType::bf16)
              throw py::attribute_error("__cuda_array_interface__: the array is not in CUDA memory");
            settle(a);
            return array_interface(a, true);
          },
          "The CUDA array interface (version 3) over a CUDA array's memory, after its work finished.")
      .def(
          "__dlpack__",
          [](const Array& a, py::object /*stream*/, py::object max_version, py::object /*dl_device*/, py::object copy) {
            // A consumer that reads DLPack 1.x says so with max_version: it gets a versioned capsule.
            const bool versioned =
                !max_version.is_none() && py::len(max_version) >= 1 && max_version[py::int_(0)].cast<int>() >= 1;
            if (!copy.is_none() && copy.cast<bool>())
              return to_dlpack(released([&] { return a.copy(); }), versioned, true);
            return to_dlpack(a, versioned, false);
          },
          py::kw_only(), py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
          py::arg("dl_device") = py::none(), py::arg("copy") = py::none(),
          "Exports the array as a DLPack capsule (zero-copy; host or CUDA memory): a DLPack 1.0 versioned one "
          "when max_version asks for 1.x, else an unversioned one. The array's work has finished before the "
          "capsule is returned, so any stream may read it.")
      .def(
          "__dlpack_device__",
          [](const Array& a) {
            const ArrayMemory w = a.memory();
            const int type = w == ArrayMemory::host                             ? 1
                             : w == ArrayMemory::cuda_device                    ? 2
                             : a.device().info().backend == BackendKind::vulkan ? 7
                                                                                : 12;
            return py::make_tuple(type, w == ArrayMemory::host ? 0 : static_cast<int>(a.device().info().index));
          },
          "(DLPack device type, device id): (1, 0) for host memory, (2, n) for cuda:n.")
      .def(
          "to",
          [](const Array& a, py::handle device) {
            const Device d = device_arg(device);
            return released([&] { return a.to(d); });
          },
          py::arg("device"), "Returns a copy of the array on device (the one way data moves between devices).")
      .def(
          "copy", [](const Array& a) { return released([&] { return a.copy(); }); },
          "Returns a new array with a copy of the elements, on the same device.")
      .def(
          "reshape",
          [](const Array& a, py::args dims) {
            Shape s = dims.size() == 1 && !py::isinstance<py::int_>(dims[0]) ? shape_arg(dims[0]) : shape_arg(dims);
            return a.reshape(std::move(s));
          },
          "Returns an array over the same elements with another shape of the same size.")
      .def(
          "write",
          [](Array& a, py::handle data) {
            py::array src = input_array(data, a.dtype(), "data");
            if (shape_of(src) != a.shape())
              fail(ErrorCategory::invalid_argument,
                   "write: data has shape " + to_string(shape_of(src)) + " but the array is " + a.describe() + ".",
                   "pass data of the array's shape.");
            const void* p = src.data();
            released([&] {
              a.write(p);
              return 0;
            });
          },
          py::arg("data"), "Copies host data of the array's shape into it (converted to its dtype).")
      .def("__matmul__", [](py::object a, py::handle b) { return matmul_any(a, b, py::none(), py::none(), {}, "@"); })
      .def("__rmatmul__", [](py::object b, py::handle a) { return matmul_any(a, b, py::none(), py::none(), {}, "@"); })
      .def("__add__",
           [](const Array& a, py::handle b) {
             const Array y = array_arg(b, a.device(), std::nullopt, CopyMode::if_needed, "b");
             return released([&] { return add(a, y); });
           })
      .def("__mul__",
           [](const Array& a, py::handle b) {
             const Array y = array_arg(b, a.device(), std::nullopt, CopyMode::if_needed, "b");
             return released([&] { return multiply(a, y); });
           })
      .def("__repr__", [](const Array& a) { return "vgpu.Array(" + a.describe() + ")"; });

  m.def(
      "asarray",
      [](py::handle x, py::object dtype, py::object device, py::object copy) {
        return array_arg(x, optional_device(device), optional_dtype(dtype), copy_mode(copy), "x");
      },
      py::arg("x"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      py::arg("copy") = py::none(),
      "asarray(x, *, dtype=None, device=None, copy=None) -> vgpu.Array\n\n"
      "x as an array on device (None: the default device). On a cpu device a C-contiguous, aligned, writeable "
      "numpy array is used in place (zero-copy: writes on either side are seen on the other); elsewhere, or with "
      "copy=True, it is copied; copy=False refuses to copy. A DLPack producer in host memory (a torch CPU tensor) "
      "is imported zero-copy on cpu devices. A vgpu.Array is returned as is (never moved between devices).");
  m.def(
      "empty",
      [](py::handle shape, py::object dtype, py::object device) {
        const Device d = device_or_default(device);
        return Array::empty(d, dtype.is_none() ? DType::f32 : dtype_arg(dtype, "dtype"), shape_arg(shape));
      },
      py::arg("shape"), py::arg("dtype") = py::none(), py::kw_only(), py::arg("device") = py::none(),
      "empty(shape, dtype=float32, *, device=None) -> vgpu.Array with uninitialised elements (memory of a dropped "
      "array may be reused); zeros() for zeros.");
  m.def(
      "zeros",
      [](py::handle shape, py::object dtype, py::object device) {
        const Device d = device_or_default(device);
        return Array::zeros(d, dtype.is_none() ? DType::f32 : dtype_arg(dtype, "dtype"), shape_arg(shape));
      },
      py::arg("shape"), py::arg("dtype") = py::none(), py::kw_only(), py::arg("device") = py::none(),
      "zeros(shape, dtype=float32, *, device=None) -> vgpu.Array of zeros.");
  m.def(
      "from_dlpack", [](py::handle x, py::object device) { return from_dlpack(x, optional_device(device)); },
      py::arg("x"), py::kw_only(), py::arg("device") = py::none(),
      "from_dlpack(x, *, device=None) -> vgpu.Array\n\n"
      "Imports a DLPack producer (torch, numpy ≥ 1.22, CuPy, JAX) or capsule zero-copy: the array uses the "
      "producer's memory, which stays alive until the array goes. Host memory imports on cpu:0 (or on the "
      "device given: CUDA registers it, a Vulkan device with host_memory_import imports it), CUDA memory on its "
      "cuda:<n> (the producer orders its pending work before vgpu's stream). "
      "A DLPack 1.0 versioned capsule is asked for where the producer makes one, else an unversioned one. "
      "Refused with a Fix: non-contiguous or read-only tensors, dtypes vgpu does not hold, memory the device "
      "cannot use in place.");
  m.def(
      "matmul",
      [](py::handle a, py::handle b, py::object out, py::object dtype, py::object device, py::object precision) {
        const ops::Precision p = precision_arg(precision);
        return matmul_any(a, b, out, dtype, optional_device(device), "matmul", p);
      },
      py::arg("A"), py::arg("B"), py::kw_only(), py::arg("out") = py::none(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("precision") = "highest",
      "matmul(A, B, *, out=None, dtype=None, device=None, precision=\"highest\")\n\n"
      "numpy.matmul's rules: 1-D operands promoted and the dimension dropped, stacks of matrices with "
      "broadcast batch dimensions, empty dimensions. With a vgpu.Array operand it runs on that array's device "
      "and returns a vgpu.Array; with host operands it runs on device (None: the default device) and returns a "
      "numpy array (written in place on cpu devices). Computes on float32, float16 and bfloat16 (16-bit inputs "
      "are stored in 16 bits, accumulated in float32 and the result rounded once: docs/numerics.md); bfloat16 "
      "host data travels as uint16 bit patterns (docs/arrays.md). When numpy's result dtype is another "
      "(float64, int32…) it raises vgpu.NotSupported unless dtype=\"float32\" (or \"float16\", \"bfloat16\") opts "
      "into converting the inputs. precision=\"tf32\" allows float32 operands to be multiplied in TF32 on GPUs "
      "with tensor cores for it (CUDA sm_80+: inputs rounded to 10 mantissa bits, float32 accumulation, about "
      "1e-3 relative error); elsewhere, and for 16-bit operands, it computes as \"highest\" (float32 "
      "throughout, the default). As torch.backends.cuda.matmul.allow_tf32, an explicit opt-in.");
  m.def(
      "add",
      [](const Array& a, py::handle b) {
        const Array y = array_arg(b, a.device(), std::nullopt, CopyMode::if_needed, "b");
        return released([&] { return add(a, y); });
      },
      py::arg("a"), py::arg("b"),
      "a + b elementwise on a's device (float32, float16 or bfloat16; one shape and dtype).");
  m.def(
      "multiply",
      [](const Array& a, py::handle b) {
        const Array y = array_arg(b, a.device(), std::nullopt, CopyMode::if_needed, "b");
        return released([&] { return multiply(a, y); });
      },
      py::arg("a"), py::arg("b"),
      "a * b elementwise on a's device (float32, float16 or bfloat16; one shape and dtype).");
  m.def(
      "axpy",
      [](py::handle alpha, const Array& x, const Array& y) {
        const Array al = array_arg(alpha, x.device(), x.dtype(), CopyMode::if_needed, "alpha");
        released([&] {
          axpy(al, x, y);
          return 0;
        });
      },
      py::arg("alpha"), py::arg("x"), py::arg("y"),
      "y += alpha * x in place (float32, float16 or bfloat16 arrays of one dtype and device; alpha is "
      "converted to x's dtype).");
  m.def(
      "sum", [](const Array& x) { return released([&] { return sum(x); }); }, py::arg("x"),
      "The sum of every element, as a 0-d array of x's dtype on x's device (float32, float16 or bfloat16; "
      "accumulated in float32).");
  m.def(
      "softmax_rows", [](const Array& x) { return released([&] { return softmax_rows(x); }); }, py::arg("x"),
      "Softmax over the last axis on x's device (float32, float16 or bfloat16; computed in float32).");
}

}  // namespace vgpu::python
