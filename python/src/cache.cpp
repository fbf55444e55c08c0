// SPDX-License-Identifier: Apache-2.0
// python/src/cache.cpp — vgpu.Cache (the seed's VGPUCache) and vgpu.KernelDatabase, whose get()
// returns a vgpu.PersistentKernel (a handle to the database's kernel; py_kernel.hpp).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "array_interop.hpp"
#include "arrays.hpp"
#include "bindings.hpp"
#include "core_args.hpp"
#include "device_arg.hpp"
#include "int_args.hpp"
#include "py_kernel.hpp"
#include "vgpu/array_ops.hpp"
#include "vgpu/cache.hpp"
#include "vgpu/kernel_database.hpp"
#include "vgpu/persistent_kernel.hpp"

namespace py = pybind11;

namespace vgpu::python {

// MultiStats as a dict: Cache.multi_stats() and QueuePipelineSet.stats() (queue.cpp).
py::dict multi_stats_dict(const MultiStats& s) {
  py::dict d;
  d["batches"] = s.batches;
  d["splits"] = s.splits;
  d["unsplit"] = s.unsplit;
  d["failures"] = s.failures;
  d["rerun_items"] = s.rerun_items;
  d["last_shares"] = s.last_shares;
  d["items"] = s.items;
  d["last_failures"] = s.last_failures;
  return d;
}

namespace {

std::string repr_str(const std::string& s) { return py::repr(py::str(s)).cast<std::string>(); }

// A C-contiguous, aligned, native float32 numpy matrix (writeable too where asked): the common
// Cache.matmul call, recognised from numpy's own fields without building shapes or dtype
// objects (each of those costs a fraction of a microsecond, and at N = 16 the whole call is
// about one). Anything else takes the general path, which converts and checks as documented.
const py::detail::PyArray_Proxy* plain_f32_matrix(py::handle x, bool writeable) {
  if (!py::isinstance<py::array>(x)) return nullptr;  // PyArray_Check: a type test
  const auto* p = py::detail::array_proxy(x.ptr());
  const auto* d = py::detail::array_descriptor_proxy(p->descr);
  constexpr int kFlags = py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ | py::detail::npy_api::NPY_ARRAY_ALIGNED_;
  const int need = kFlags | (writeable ? py::detail::npy_api::NPY_ARRAY_WRITEABLE_ : 0);
  const bool native = d->byteorder != '>';  // '=', '<' or '|' on the little-endian hosts vgpu runs on
  if (p->nd != 2 || (p->flags & need) != need || d->type_num != py::detail::npy_api::NPY_FLOAT_ || !native)
    return nullptr;
  return p;
}

// The device a Cache or KernelDatabase runs on, or None (selection before its first call).
py::object device_or_none(const Device& d) { return d ? py::cast(d) : py::none(); }

// One 2-D input of Cache.matmul_batch, checked: its (rows, cols).
std::pair<std::uint64_t, std::uint64_t> matrix_dims(const py::array& a, const char* name) {
  if (a.ndim() != 2)
    fail(ErrorCategory::invalid_argument,
         std::string("matmul_batch: ") + name + " has " + std::to_string(a.ndim()) + " dimension" +
             (a.ndim() == 1 ? "" : "s") + " (shape " + py::str(a.attr("shape")).cast<std::string>() +
             "); Cache.matmul_batch multiplies 2-D matrices.",
         std::string("Pass a 2-D array (e.g. ") + name +
             ".reshape(rows, cols)), or use Cache.matmul, which takes stacks.");
  const auto r = static_cast<std::uint64_t>(a.shape(0)), c = static_cast<std::uint64_t>(a.shape(1));
  if (r == 0 || c == 0)
    fail(ErrorCategory::invalid_argument,
         std::string("matmul_batch: ") + name + " is empty (" + std::to_string(r) + "x" + std::to_string(c) + ").",
         "Pass matrices with at least one row and one column.");
  if (r > std::numeric_limits<std::uint32_t>::max() || c > std::numeric_limits<std::uint32_t>::max())
    fail(ErrorCategory::invalid_argument,
         std::string("matmul: ") + name + " is " + std::to_string(r) + "x" + std::to_string(c) +
             ", larger than vgpu's 2^32-1 rows or columns.",
         "Split the product into blocks.");
  return {r, c};
}

// The device Cache.matmul of host operands of dtype runs on: Cache::device_for at the product's
// size (a stack's rows counted together, as one product), or nothing for an empty product
// (then the default device: there is nothing to run).
std::optional<Device> device_for_operands(const Cache& cache, DType dtype, py::handle a, py::handle b,
                                          ops::Precision precision) {
  auto shape = [](py::handle x) {
    return shape_of(py::isinstance<py::array>(x) ? py::reinterpret_borrow<py::array>(x)
                                                 : py::array(py::module_::import("numpy").attr("asarray")(x)));
  };
  const Shape as = shape(a), bs = shape(b);
  const Shape out = matmul_shape(as, bs);  // np.matmul's rules; throws for 0-d operands and mismatches
  const std::uint64_t k = as.back(), n = bs.size() == 1 ? 1 : bs.back();
  const std::uint64_t rows = n ? element_count(out) / n : 0;
  if (rows == 0 || k == 0 || n == 0) return std::nullopt;
  auto u32 = [](std::uint64_t v) { return static_cast<std::uint32_t>(std::min<std::uint64_t>(v, 0xFFFFFFFFull)); };
  py::gil_scoped_release release;  // a first call of a size class measures the devices
  return cache.device_for(dtype, u32(rows), u32(k), u32(n), precision);
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
                    "It keeps at most 64 persistent kernels holding at most 1 GiB of buffers by default "
                    "(VGPU_PERSISTENT_CAPACITY, VGPU_PERSISTENT_MAX_BYTES), least recently used shape out "
                    "(size, buffer_bytes, evictions).\n"
                    "Thread-safe: call it from several threads (calls of one shape are serialised; the GIL is "
                    "released while the device works).")
      .def(py::init([](py::object device, std::optional<std::vector<std::string>> devices) {
             if (devices) {
               if (!device.is_none())
                 fail(ErrorCategory::invalid_argument, "Cache: both device and devices are given.",
                      "Pass device= for one device or devices=[...] for a set, not both.");
               py::gil_scoped_release release;  // opening devices may take a while
               return std::make_unique<Cache>(DeviceSet(*devices));
             }
             if (device.is_none()) return std::make_unique<Cache>();
             Device d = device_arg(device);
             return std::make_unique<Cache>(std::move(d));
           }),
           py::arg("device") = py::none(), py::kw_only(), py::arg("devices") = py::none(),
           "Cache(device=None, *, devices=None): None selects a device per shape (measured); otherwise a "
           "vgpu.Device, vgpu.DeviceInfo or \"backend:index\" id. devices=[\"cpu:0\", \"cpu:1\"] spreads "
           "matmul_batch and large matmuls over those devices (a DeviceSet; docs/scale-out.md).")
      .def(
          "matmul_batch",
          [](Cache& cache, const std::vector<std::pair<py::handle, py::handle>>& pairs, py::object precision_obj) {
            const ops::Precision precision = precision_arg(precision_obj);
            std::vector<std::pair<Matrix, Matrix>> in;
            in.reserve(pairs.size());
            auto to_matrix = [](py::handle obj, const char* name) {
              py::array a = input_array(obj, DType::f32, name);
              const auto [r, c] = matrix_dims(a, name);
              Matrix mat(static_cast<std::uint32_t>(r), static_cast<std::uint32_t>(c));
              std::memcpy(mat.data.data(), a.data(), mat.data.size() * sizeof(float));
              return mat;
            };
            for (const auto& [a, b] : pairs) in.emplace_back(to_matrix(a, "A"), to_matrix(b, "B"));
            std::vector<Matrix> out;
            {
              py::gil_scoped_release release;
              out = cache.matmul_batch(in, precision);
            }
            py::list result;
            for (const Matrix& c : out) {
              py::array arr = new_array(DType::f32, {c.rows, c.cols});
              std::memcpy(arr.mutable_data(), c.data.data(), c.data.size() * sizeof(float));
              result.append(arr);
            }
            return result;
          },
          py::arg("pairs"), py::kw_only(), py::arg("precision") = "highest",
          "matmul_batch(pairs, *, precision=\"highest\") -> list[numpy.ndarray]\n\n"
          "Returns [A·B for (A, B) in pairs], every pair of one shape (else vgpu.InvalidArgument). With "
          "devices=[...] the batch is spread over the set in proportion to the devices' measured speed; a "
          "device that fails has its share rerun on the others. Inputs are converted as matmul's.")
      .def_property_readonly(
          "devices",
          [](const Cache& c) -> py::object {
            const DeviceSet* s = c.devices();
            return s ? py::cast(s->ids()) : py::none();
          },
          "The ids of the device set the cache spreads over, or None for a one-device cache.")
      .def(
          "multi_stats", [](const Cache& c) { return multi_stats_dict(c.multi_stats()); },
          "Returns what spreading over the set did: batches, splits, unsplit, failures, rerun_items, "
          "last_shares, items (per device) and last_failures.")
      .def_property(
          "split_min_work", &Cache::split_min_work,
          [](Cache& c, py::handle work) { c.set_split_min_work(uint_arg(work, "split_min_work")); },
          "matmul work (M·K·N) from which matmul splits the rows of C over the set (0: always).")
      .def(
          "matmul",
          [](Cache& cache, py::handle a_obj, py::handle b_obj, py::object out, py::object dtype,
             py::object precision_obj) -> py::object {
            const ops::Precision precision = precision_arg(precision_obj);
            // The common call: two float32 matrices, into a new array or out=.
            if (dtype.is_none()) {
              const auto* pa = plain_f32_matrix(a_obj, false);
              const auto* pb = pa ? plain_f32_matrix(b_obj, false) : nullptr;
              const auto* po = out.is_none() ? nullptr : plain_f32_matrix(out, true);
              const std::uint64_t m = pa ? pa->dimensions[0] : 0, k = pa ? pa->dimensions[1] : 0,
                                  n = pb ? pb->dimensions[1] : 0;
              constexpr std::uint64_t kMax = std::numeric_limits<std::uint32_t>::max();
              if (pa && pb && static_cast<std::uint64_t>(pb->dimensions[0]) == k && m && k && n && m <= kMax &&
                  k <= kMax && n <= kMax &&
                  (out.is_none() || (po && static_cast<std::uint64_t>(po->dimensions[0]) == m &&
                                     static_cast<std::uint64_t>(po->dimensions[1]) == n))) {
                py::array c =
                    out.is_none() ? new_array(DType::f32, Shape{m, n}) : py::reinterpret_borrow<py::array>(out);
                const auto* fa = reinterpret_cast<const float*>(pa->data);
                const auto* fb = reinterpret_cast<const float*>(pb->data);
                auto* fc = static_cast<float*>(c.mutable_data());
                {
                  py::gil_scoped_release release;
                  cache.matmul(fa, fb, fc, static_cast<std::uint32_t>(m), static_cast<std::uint32_t>(k),
                               static_cast<std::uint32_t>(n), precision);
                }
                return c;
              }
            }
            if (py::isinstance<Array>(a_obj) || py::isinstance<Array>(b_obj))
              return matmul_any(a_obj, b_obj, out, dtype, std::nullopt, "matmul", precision);
            // float32 goes through Cache::matmul below; float16 and bfloat16 run as array ops on the
            // device the cache picks for that dtype and size (Cache::device_for: measured per dtype).
            if (const DType compute = matmul_compute_dtype(a_obj, b_obj, dtype, "matmul"); compute != DType::f32) {
              return matmul_any(a_obj, b_obj, out, dtype, device_for_operands(cache, compute, a_obj, b_obj, precision),
                                "matmul", precision);
            }
            py::array a = input_array(a_obj, DType::f32, "A");
            py::array b = input_array(b_obj, DType::f32, "B");
            const Shape as = shape_of(a), bs = shape_of(b);
            const Shape shape = matmul_shape(as, bs);  // np.matmul's rules; throws for 0-d and mismatches
            if (bs.size() > 2) {
              // A stack of B: the array ops run it on the cache's device (one launch of the batched kernel).
              const Device d = cache.device();
              return matmul_any(a, b, out, py::none(), d ? std::optional<Device>(d) : std::nullopt, "matmul",
                                precision);
            }
            py::array c = matmul_output(out, shape, DType::f32, "matmul");
            // B is one matrix: A's rows (a stack of them is one C-contiguous block) times B, one call.
            const std::uint64_t k = as.back(), n = bs.size() == 1 ? 1 : bs.back();
            const std::uint64_t rows = element_count(as) / std::max<std::uint64_t>(k, 1);
            if (element_count(shape) == 0) return c;
            if (k == 0) {  // an empty sum: zeros, as numpy
              std::memset(c.mutable_data(), 0, static_cast<std::size_t>(c.nbytes()));
              return c;
            }
            constexpr std::uint64_t kMax = std::numeric_limits<std::uint32_t>::max();
            if (rows > kMax || k > kMax || n > kMax)
              fail(ErrorCategory::invalid_argument,
                   "matmul: A @ B is " + std::to_string(rows) + "x" + std::to_string(k) + " by " + std::to_string(k) +
                       "x" + std::to_string(n) + ", past vgpu's 2^32-1 rows or columns.",
                   "Split the product into blocks.");
            const auto* pa = static_cast<const float*>(a.data());
            const auto* pb = static_cast<const float*>(b.data());
            auto* pc = static_cast<float*>(c.mutable_data());
            {
              py::gil_scoped_release release;
              cache.matmul(pa, pb, pc, static_cast<std::uint32_t>(rows), static_cast<std::uint32_t>(k),
                           static_cast<std::uint32_t>(n), precision);
            }
            return c;
          },
          py::arg("A"), py::arg("B"), py::kw_only(), py::arg("out") = py::none(), py::arg("dtype") = py::none(),
          py::arg("precision") = "highest",
          "matmul(A, B, *, out=None, dtype=None, precision=\"highest\") -> numpy.ndarray\n\n"
          "Returns A @ B with numpy.matmul's rules (docs/arrays.md): 2-D matrices, 1-D vectors (promoted, the "
          "dimension dropped), stacks of matrices with broadcast batch dimensions, empty dimensions. A stack of A "
          "times one B is one call of the cache's persistent kernel; a stack of B runs as array ops on the cache's "
          "device (one launch of the batched kernel). C-contiguous float32 arrays are used in place (zero-copy; on the "
          "CPU device the result is written "
          "straight into the returned array); transposed or sliced views, lists and float16/int8/uint8 inputs "
          "(which numpy promotes to float32) are converted once. When numpy's result dtype is not float32 "
          "(float64, int32…), vgpu.NotSupported says so, unless dtype=\"float32\" opts into converting the "
          "inputs. bool, complex and object arrays are refused (vgpu.InvalidArgument). out must be a writeable, "
          "C-contiguous float32 array of the result's shape (never converted). With a vgpu.Array operand it runs "
          "as vgpu.matmul on that array's device. precision=\"tf32\" allows TF32 tensor cores for float32 "
          "operands (as vgpu.matmul; the op matmul_tf32, selected and cached apart). Wrong shapes raise "
          "vgpu.InvalidArgument; the Cache stays usable.")
      .def("report", &Cache::report,
           "Returns \"VGPUCache: <compiles> compiles, <hits> cache hits, <dispatches> dispatches\".")
      .def_property_readonly("compiles", &Cache::compiles,
                             "How many calls had to build a persistent kernel (a new shape).")
      .def_property_readonly("hits", &Cache::hits, "How many calls reused a persistent kernel.")
      .def_property_readonly("dispatches", &Cache::dispatches,
                             "How many matmuls ran (each is one dispatch: the matmul plan has one step).")
      .def_property_readonly("size", &Cache::size,
                             "How many persistent kernels the cache holds now (one per shape and device it keeps).")
      .def_property_readonly("buffer_bytes", &Cache::buffer_bytes,
                             "The bytes of device memory the persistent kernels it holds keep in their buffers.")
      .def_property_readonly("evictions", &Cache::evictions,
                             "How many persistent kernels the bounds evicted (least recently used shapes; "
                             "VGPU_PERSISTENT_CAPACITY, VGPU_PERSISTENT_MAX_BYTES).")
      .def_property_readonly(
          "device", [](const Cache& c) { return device_or_none(c.device()); },
          "The device the cache runs on (a vgpu.Device; with selection the device of the last "
          "call, None before the first).")
      .def("__repr__", [](const Cache& c) {
        const Device d = c.device();
        return "Cache(device=" + (d ? repr_str(d.info().id()) : std::string("None")) +
               ", compiles=" + std::to_string(c.compiles()) + ", hits=" + std::to_string(c.hits()) +
               ", dispatches=" + std::to_string(c.dispatches()) + ")";
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
             Device d = device_arg(device);
             return std::make_unique<KernelDatabase>(std::move(d));
           }),
           py::arg("device") = py::none(),
           "KernelDatabase(device=None): None selects a device per (id, shape); otherwise a vgpu.Device, "
           "vgpu.DeviceInfo or \"backend:index\" id.")
      .def(
          "get",
          [](KernelDatabase& db, const std::string& kernel_id, py::handle shape) {
            const Shape s = op_shape_arg(kernel_id, shape);
            std::shared_ptr<PersistentKernel> kernel;
            {
              py::gil_scoped_release release;
              kernel = db.get(kernel_id, s);
            }
            return wrap_kernel(std::move(kernel));
          },
          py::arg("kernel_id"), py::arg("shape"),
          "get(kernel_id, shape) -> vgpu.PersistentKernel\n\n"
          "Returns the persistent kernel for kernel_id at shape, building it on a miss (counted in misses) and "
          "returning the one already built otherwise (hits). shape: an int N (matmul: N×N×N, softmax_rows: N×N, "
          "others: n) or a tuple (matmul (M, K, N), softmax_rows (rows, cols), others (n,)). Raises "
          "vgpu.InvalidArgument for an unknown id or a bad shape.")
      .def_property_readonly("hits", &KernelDatabase::hits, "How many get() calls found a kernel already built.")
      .def_property_readonly("misses", &KernelDatabase::misses,
                             "How many get() calls had to build (compile, allocate, bind) a kernel.")
      .def_property_readonly("size", &KernelDatabase::size, "The number of kernels held now.")
      .def("__len__", &KernelDatabase::size, "The number of kernels held now.")
      .def_property_readonly("buffer_bytes", &KernelDatabase::buffer_bytes,
                             "The bytes of device memory the kernels held now keep in their buffers.")
      .def_property_readonly("evictions", &KernelDatabase::evictions,
                             "How many kernels the bounds evicted (least recently used; evict() does not count).")
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
      .def_property_readonly(
          "device", [](const KernelDatabase& db) { return device_or_none(db.device()); },
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
