// python/src/cache.cpp — vgpu.Cache (the seed's VGPUCache) and vgpu.KernelDatabase, whose get()
// returns a callable kernel (vgpu._DatabaseKernel: a handle to the database's PersistentKernel).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "bindings.hpp"
#include "core_args.hpp"
#include "vgpu/cache.hpp"
#include "vgpu/kernel_database.hpp"
#include "vgpu/persistent_kernel.hpp"

namespace py = pybind11;

namespace vgpu::python {
namespace {

std::string repr_str(const std::string& s) { return py::repr(py::str(s)).cast<std::string>(); }

std::string shape_text(const Shape& s) {
  std::string out = "(";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

py::tuple shape_tuple(const Shape& s) {
  py::tuple t(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) t[i] = py::int_(s[i]);
  return t;
}

// The device a Cache or KernelDatabase runs on, or None (selection before its first call).
py::object device_or_none(const Device& d) { return d ? py::cast(d) : py::none(); }

// A TensorArg over numpy memory: read-only when out is null.
TensorArg tensor_arg(DType d, const void* in, void* out, Shape shape) {
  switch (d) {
    case DType::f32:
      return out ? TensorArg(static_cast<float*>(out), std::move(shape))
                 : TensorArg(static_cast<const float*>(in), std::move(shape));
    case DType::i32:
      return out ? TensorArg(static_cast<std::int32_t*>(out), std::move(shape))
                 : TensorArg(static_cast<const std::int32_t*>(in), std::move(shape));
    case DType::u32:
      return out ? TensorArg(static_cast<std::uint32_t*>(out), std::move(shape))
                 : TensorArg(static_cast<const std::uint32_t*>(in), std::move(shape));
  }
  fail(ErrorCategory::internal, "tensor_arg: unknown dtype.", "Report this vgpu bug.");
}

// One 2-D input of Cache.matmul, checked: its (rows, cols).
std::pair<std::uint64_t, std::uint64_t> matrix_dims(const py::array& a, const char* name) {
  if (a.ndim() != 2)
    fail(ErrorCategory::invalid_argument,
         std::string("matmul: ") + name + " has " + std::to_string(a.ndim()) + " dimension" +
             (a.ndim() == 1 ? "" : "s") + " (shape " + py::str(a.attr("shape")).cast<std::string>() +
             "); Cache.matmul multiplies 2-D matrices.",
         std::string("Pass a 2-D array (e.g. ") + name + ".reshape(rows, cols)); for a batch, call matmul once per matrix.");
  const auto r = static_cast<std::uint64_t>(a.shape(0)), c = static_cast<std::uint64_t>(a.shape(1));
  if (r == 0 || c == 0)
    fail(ErrorCategory::invalid_argument,
         std::string("matmul: ") + name + " is empty (" + std::to_string(r) + "x" + std::to_string(c) + ").",
         "Pass matrices with at least one row and one column.");
  if (r > std::numeric_limits<std::uint32_t>::max() || c > std::numeric_limits<std::uint32_t>::max())
    fail(ErrorCategory::invalid_argument,
         std::string("matmul: ") + name + " is " + std::to_string(r) + "x" + std::to_string(c) +
             ", larger than vgpu's 2^32-1 rows or columns.",
         "Split the product into blocks.");
  return {r, c};
}

// What KernelDatabase.get() returns: a kernel built for (kernel_id, shape), called with the
// plan's inputs (its read and read_write tensors, in the plan's order) and returning its
// outputs (write and read_write tensors) as new arrays.
struct DatabaseKernel {
  std::shared_ptr<PersistentKernel> kernel;
  std::string id;
  Shape shape;
};

py::object call_kernel(const DatabaseKernel& k, const py::args& args) {
  const KernelPlan& plan = k.kernel->plan();
  std::vector<const TensorSpec*> visible, inputs;
  for (const TensorSpec& t : plan.tensors)
    if (!t.scratch) {
      visible.push_back(&t);
      if (t.access != Access::write) inputs.push_back(&t);
    }
  if (args.size() != inputs.size()) {
    std::string names;
    for (const TensorSpec* t : inputs) names += (names.empty() ? "" : ", ") + t->name;
    fail(ErrorCategory::invalid_argument,
         "kernel '" + k.id + "' at " + to_string(k.shape) + " takes " + std::to_string(inputs.size()) +
             " input array" + (inputs.size() == 1 ? "" : "s") + " (" + names + ") but got " +
             std::to_string(args.size()) + ".",
         "Pass the inputs in this order: " + names + " (the outputs are returned).");
  }
  std::vector<py::array> held;  // keeps every array alive across the call (GIL released)
  std::vector<py::array> outputs;
  std::vector<TensorArg> targs;
  held.reserve(visible.size());
  targs.reserve(visible.size());
  std::size_t next = 0;
  for (const TensorSpec* t : visible) {
    if (t->access == Access::write) {
      py::array out = new_array(t->dtype, t->shape);
      targs.push_back(tensor_arg(t->dtype, nullptr, out.mutable_data(), t->shape));
      outputs.push_back(out);
      held.push_back(std::move(out));
      continue;
    }
    py::array in = input_array(args[next++], t->dtype, t->name);
    if (t->access == Access::read) {
      targs.push_back(tensor_arg(t->dtype, in.data(), nullptr, shape_of(in)));
      held.push_back(std::move(in));
      continue;
    }
    // read_write: the input is copied into a new array the kernel updates (the caller's is untouched).
    if (shape_of(in) != t->shape)
      fail(ErrorCategory::invalid_argument,
           "kernel '" + k.id + "': " + t->name + " has shape " + to_string(shape_of(in)) + " but the kernel takes " +
               to_string(t->shape) + ".",
           "Pass an array of shape " + to_string(t->shape) + ", or get() the kernel for your shape.");
    py::array out = new_array(t->dtype, t->shape);
    std::memcpy(out.mutable_data(), in.data(), static_cast<std::size_t>(in.nbytes()));
    targs.push_back(tensor_arg(t->dtype, nullptr, out.mutable_data(), t->shape));
    outputs.push_back(out);
    held.push_back(std::move(in));
    held.push_back(std::move(out));
  }
  {
    py::gil_scoped_release release;
    (*k.kernel)(std::span<const TensorArg>(targs.data(), targs.size()));
  }
  if (outputs.size() == 1) return outputs[0];
  py::tuple result(outputs.size());
  for (std::size_t i = 0; i < outputs.size(); ++i) result[i] = outputs[i];
  return result;
}

}  // namespace

void bind_cache(py::module_& m) {
  py::class_<Cache>(m, "Cache",
                    "The seed's VGPUCache: matmul(A, B) on numpy arrays, on the selected device, compiling once "
                    "per shape and reusing the persistent kernel afterwards. report() reads\n"
                    "\"VGPUCache: 1 compiles, 99 cache hits, 100 dispatches\" after 100 same-shape calls.\n\n"
                    "Cache() runs each shape on the device measured fastest for it (vgpu.select: the choice "
                    "persists across processes, a failing device falls back to the next); Cache(device) uses "
                    "that device (a vgpu.Device, a vgpu.DeviceInfo or an id such as \"vulkan:0\").\n"
                    "Thread-safe: call it from several threads (calls of one shape are serialised; the GIL is "
                    "released while the device works).")
      .def(py::init([](py::object device) {
             if (device.is_none()) return std::make_unique<Cache>();
             Device d = device_from_arg(device);
             return std::make_unique<Cache>(std::move(d));
           }),
           py::arg("device") = py::none(),
           "Cache(device=None): None selects a device per shape (measured); otherwise a vgpu.Device, "
           "vgpu.DeviceInfo or \"backend:index\" id.")
      .def(
          "matmul",
          [](Cache& cache, py::handle a_obj, py::handle b_obj, py::object out) {
            py::array a = input_array(a_obj, DType::f32, "A");
            py::array b = input_array(b_obj, DType::f32, "B");
            const auto [m, k] = matrix_dims(a, "A");
            const auto [k2, n] = matrix_dims(b, "B");
            if (k != k2)
              fail(ErrorCategory::invalid_argument,
                   "matmul: A is " + std::to_string(m) + "x" + std::to_string(k) + " and B is " + std::to_string(k2) +
                       "x" + std::to_string(n) + "; A's columns must equal B's rows.",
                   "Transpose or reshape so that A is M×K and B is K×N.");
            py::array c;
            if (out.is_none()) {
              c = new_array(DType::f32, {m, n});
            } else {
              c = output_array(out, DType::f32, "out");
              if (shape_of(c) != Shape{m, n})
                fail(ErrorCategory::invalid_argument,
                     "matmul: out has shape " + py::str(c.attr("shape")).cast<std::string>() + " but A·B is " +
                         std::to_string(m) + "x" + std::to_string(n) + ".",
                     "Pass out=numpy.empty((" + std::to_string(m) + ", " + std::to_string(n) +
                         "), dtype=numpy.float32), or leave out=None for a new array.");
            }
            const auto* pa = static_cast<const float*>(a.data());
            const auto* pb = static_cast<const float*>(b.data());
            auto* pc = static_cast<float*>(c.mutable_data());
            {
              py::gil_scoped_release release;
              cache.matmul(pa, pb, pc, static_cast<std::uint32_t>(m), static_cast<std::uint32_t>(k),
                           static_cast<std::uint32_t>(n));
            }
            return c;
          },
          py::arg("A"), py::arg("B"), py::kw_only(), py::arg("out") = py::none(),
          "matmul(A, B, *, out=None) -> numpy.ndarray\n\n"
          "Returns A·B as a new float32 array of shape (M, N) (or writes it into out and returns out).\n"
          "A (M×K) and B (K×N) are 2-D arrays: a C-contiguous float32 array is used in place (zero-copy); any "
          "other real numeric array or array-like (float64, int, a transposed or sliced view, nested lists) is "
          "converted once to C-contiguous float32 (float64 values are rounded to float32). bool, complex and "
          "object arrays are refused. out must be a writeable, C-contiguous float32 array of shape (M, N) "
          "(never converted). Wrong dimensions, A's columns != B's rows or an empty matrix raise "
          "vgpu.InvalidArgument; the Cache stays usable.")
      .def("report", &Cache::report, "Returns \"VGPUCache: <compiles> compiles, <hits> cache hits, <dispatches> dispatches\".")
      .def_property_readonly("compiles", &Cache::compiles, "How many calls had to build a persistent kernel (a new shape).")
      .def_property_readonly("hits", &Cache::hits, "How many calls reused a persistent kernel.")
      .def_property_readonly("dispatches", &Cache::dispatches,
                             "How many matmuls ran (each is one dispatch: the matmul plan has one step).")
      .def_property_readonly("device", [](const Cache& c) { return device_or_none(c.device()); },
                             "The device the cache runs on (a vgpu.Device; with selection the device of the last "
                             "call, None before the first).")
      .def("__repr__", [](const Cache& c) {
        const Device d = c.device();
        return "Cache(device=" + (d ? repr_str(d.info().id()) : std::string("None")) +
               ", compiles=" + std::to_string(c.compiles()) + ", hits=" + std::to_string(c.hits()) +
               ", dispatches=" + std::to_string(c.dispatches()) + ")";
      });

  py::class_<DatabaseKernel>(m, "_DatabaseKernel",
                             "A persistent kernel from KernelDatabase.get(): compiled, allocated and bound once; "
                             "k(*inputs) only uploads, dispatches and reads back. Inputs are the op's read (and "
                             "read-write) tensors in order (matmul: k(A, B) -> C; add/mul: k(a, b) -> out; "
                             "axpy: k(a, x, y) -> new y; reduce_sum: k(x) -> out[1]; softmax_rows: k(x) -> out), "
                             "following Cache.matmul's numpy rules; outputs are returned as new arrays (a tuple "
                             "when there are several). Calls are serialised; safe from any thread.")
      .def("__call__", &call_kernel, "k(*inputs) -> output array(s); see the class documentation.")
      .def_property_readonly("kernel_id", [](const DatabaseKernel& k) { return k.id; }, "The kernel id it was got for.")
      .def_property_readonly("shape", [](const DatabaseKernel& k) { return shape_tuple(k.shape); },
                             "The shape it was got for.")
      .def_property_readonly("calls", [](const DatabaseKernel& k) { return k.kernel->calls(); },
                             "The number of calls made so far.")
      .def_property_readonly("dispatches", [](const DatabaseKernel& k) { return k.kernel->dispatches(); },
                             "The number of kernel dispatches made so far (calls × steps).")
      .def_property_readonly("total_seconds", [](const DatabaseKernel& k) { return k.kernel->total_seconds(); },
                             "The total wall time spent inside calls, in seconds.")
      .def_property_readonly("device", [](const DatabaseKernel& k) { return k.kernel->device(); },
                             "The device the kernel lives on (a vgpu.Device).")
      .def_property_readonly(
          "inputs",
          [](const DatabaseKernel& k) {
            std::vector<std::string> names;
            for (const TensorSpec& t : k.kernel->plan().tensors)
              if (!t.scratch && t.access != Access::write) names.push_back(t.name);
            return names;
          },
          "Names of the arrays a call takes, in order.")
      .def_property_readonly(
          "outputs",
          [](const DatabaseKernel& k) {
            std::vector<std::string> names;
            for (const TensorSpec& t : k.kernel->plan().tensors)
              if (!t.scratch && t.access != Access::read) names.push_back(t.name);
            return names;
          },
          "Names of the arrays a call returns, in order.")
      .def("__eq__", [](const DatabaseKernel& a, const DatabaseKernel& b) { return a.kernel == b.kernel; },
           py::is_operator())
      .def("__hash__", [](const DatabaseKernel& k) { return std::hash<const void*>()(k.kernel.get()); })
      .def("__repr__", [](const DatabaseKernel& k) {
        return "<vgpu kernel " + repr_str(k.id) + " " + shape_text(k.shape) + " on " + k.kernel->device().info().id() +
               ", " + std::to_string(k.kernel->calls()) + " calls>";
      });

  py::class_<KernelDatabase>(m, "KernelDatabase",
                             "Persistent kernels looked up by (kernel id, shape), the seed's KernelDatabase: "
                             "get(kernel_id, N) builds a kernel only when the shape or the device changes and "
                             "returns it from the database afterwards; report() reads \"KernelDB: <hits> hits, "
                             "<misses> compiles\". The built-in ops (vgpu.ops()) are registered.\n\n"
                             "KernelDatabase() selects a device per (id, size class) (measured, persisted); "
                             "KernelDatabase(device) builds every kernel on that device. Thread-safe: concurrent "
                             "first get()s of one key build once.")
      .def(py::init([](py::object device) {
             if (device.is_none()) return std::make_unique<KernelDatabase>();
             Device d = device_from_arg(device);
             return std::make_unique<KernelDatabase>(std::move(d));
           }),
           py::arg("device") = py::none(),
           "KernelDatabase(device=None): None selects a device per (id, shape); otherwise a vgpu.Device, "
           "vgpu.DeviceInfo or \"backend:index\" id.")
      .def(
          "get",
          [](KernelDatabase& db, const std::string& kernel_id, py::handle shape) {
            DatabaseKernel k{nullptr, kernel_id, shape_arg(kernel_id, shape)};
            {
              py::gil_scoped_release release;
              k.kernel = db.get(kernel_id, k.shape);
            }
            return k;
          },
          py::arg("kernel_id"), py::arg("shape"),
          "get(kernel_id, shape) -> callable kernel\n\n"
          "Returns the persistent kernel for kernel_id at shape, building it on a miss (counted in misses) and "
          "returning the one already built otherwise (hits). shape: an int N (matmul: N×N×N, softmax_rows: N×N, "
          "others: n) or a tuple (matmul (M, K, N), softmax_rows (rows, cols), others (n,)). Raises "
          "vgpu.InvalidArgument for an unknown id or a bad shape.")
      .def_property_readonly("hits", &KernelDatabase::hits, "How many get() calls found a kernel already built.")
      .def_property_readonly("misses", &KernelDatabase::misses,
                             "How many get() calls had to build (compile, allocate, bind) a kernel.")
      .def_property_readonly("size", &KernelDatabase::size, "The number of kernels held now.")
      .def("__len__", &KernelDatabase::size, "The number of kernels held now.")
      .def("report", &KernelDatabase::report, "Returns \"KernelDB: <hits> hits, <misses> compiles\".")
      .def(
          "evict",
          [](KernelDatabase& db, std::optional<std::string> kernel_id) {
            py::gil_scoped_release release;
            if (kernel_id)
              db.evict(*kernel_id);
            else
              db.evict();
          },
          py::arg("kernel_id") = py::none(),
          "Drops every kernel built for kernel_id (None: every kernel). Kernels already returned by get() stay "
          "usable; the next get() builds again.")
      .def_property_readonly("device", [](const KernelDatabase& db) { return device_or_none(db.device()); },
                             "The device kernels are built on (with selection: the device of the last get(), "
                             "None before the first).")
      .def_property_readonly("selects", &KernelDatabase::selects,
                             "True when devices are selected per (id, shape) rather than fixed.")
      .def("__repr__", [](const KernelDatabase& db) {
        const Device d = db.device();
        return std::string("KernelDatabase(device=") + (d ? repr_str(d.info().id()) : std::string("None")) +
               (db.selects() ? " (selected)" : "") + ", size=" + std::to_string(db.size()) +
               ", hits=" + std::to_string(db.hits()) + ", misses=" + std::to_string(db.misses()) + ")";
      });
}

}  // namespace vgpu::python
