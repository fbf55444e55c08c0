// SPDX-License-Identifier: Apache-2.0
// python/src/array_interop.cpp — vgpu.Array and host data, DLPack and numpy's dtype rules
// (array_interop.hpp).
#include "array_interop.hpp"

#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "arrays.hpp"
#include "dlpack_versioned.hpp"
#include "vgpu/array_ops.hpp"
#include "vgpu/error.hpp"
#include "vgpu/runtime.hpp"

namespace py = pybind11;

namespace vgpu::python {
namespace {

std::string text(py::handle h) { return py::str(h).cast<std::string>(); }

// --- Work that needs the GIL, from threads that may not hold it --------------------------------
// An Array over numpy's memory (or a DLPack producer's) is released when its buffer is freed,
// which may happen on any thread, under a device's lock: waiting there for the GIL could wait
// for a thread that holds the GIL and waits for that device. So without the GIL the release is
// queued, and Python runs it at its next chance (Py_AddPendingCall) or at vgpu's next call.
std::mutex& pending_mutex() {
  static auto* m = new std::mutex;  // never destroyed: releases may come during exit
  return *m;
}
std::vector<std::function<void()>>& pending() {
  static auto* v = new std::vector<std::function<void()>>;
  return *v;
}

bool python_alive() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

// Runs the queued releases (GIL held).
int run_pending(void*) {
  std::vector<std::function<void()>> due;
  {
    std::lock_guard lock(pending_mutex());
    due.swap(pending());
  }
  for (auto& f : due) f();
  return 0;
}

// Runs f with the GIL: now when this thread holds it, else queued (see above). During exit,
// never: what it would free is left to the process's end.
void with_gil_soon(std::function<void()> f) {
  if (!python_alive()) return;
  if (PyGILState_Check()) {
    f();
    return;
  }
  {
    std::lock_guard lock(pending_mutex());
    pending().push_back(std::move(f));
  }
  Py_AddPendingCall(&run_pending, nullptr);  // a full queue is fine: the next call drains all
}

// --- dtypes ----------------------------------------------------------------------------------

[[noreturn]] void fail_dtype(std::string_view what, const std::string& got) {
  fail(ErrorCategory::invalid_argument, std::string(what) + " is " + got + ", not a dtype vgpu arrays hold.",
       "use float32, float64, float16, bfloat16, int32, uint32, int8 or uint8.");
}

// The numpy dtype of an operand: a vgpu.Array's, an array's .dtype, or numpy's guess for a list.
py::object operand_dtype(py::handle x) {
  if (py::isinstance<Array>(x)) return dtype_object(x.cast<const Array&>().dtype());
  if (py::hasattr(x, "dtype") && py::isinstance<py::array>(x)) return x.attr("dtype");
  return py::module_::import("numpy").attr("asarray")(x).attr("dtype");
}

// --- DLPack ----------------------------------------------------------------------------------

// What a capsule vgpu exports owns: the tensor's description and the array. Managed is
// DLManagedTensor ("dltensor") or DLManagedTensorVersioned ("dltensor_versioned").
template <class Managed>
struct Exported {
  Managed managed{};
  std::vector<std::int64_t> shape;
  Array array;
};

template <class Managed>
void delete_exported(Managed* t) {
  delete static_cast<Exported<Managed>*>(t->manager_ctx);
}

template <class Managed>
constexpr const char* kCapsuleName = "dltensor";
template <>
constexpr const char* kCapsuleName<DLManagedTensorVersioned> = "dltensor_versioned";

// A capsule nobody consumed frees what it holds; a consumed one was renamed "used_dltensor"
// ("used_dltensor_versioned").
template <class Managed>
void capsule_destructor(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kCapsuleName<Managed>)) return;
  auto* t = static_cast<Managed*>(PyCapsule_GetPointer(capsule, kCapsuleName<Managed>));
  if (t && t->deleter) t->deleter(t);
}

// Whether a producer type's __dlpack__ takes max_version (DLPack 1.0 exporters: numpy ≥ 2.1,
// torch ≥ 2.4), learnt from its first call: an older one raises TypeError, and asking every
// call would cost an exception each time. Keyed by the type object, which the dict keeps.
py::dict& max_version_support() {
  static auto* d = new py::dict;  // never destroyed: Python may be gone at exit
  return *d;
}

std::optional<DType> dtype_of_dl(DLDataType t) {
  if (t.lanes != 1) return std::nullopt;
  switch (t.code) {
    case kDLFloat:
      return t.bits == 32   ? std::optional(DType::f32)
             : t.bits == 64 ? std::optional(DType::f64)
             : t.bits == 16 ? std::optional(DType::f16)
                            : std::nullopt;
    case kDLBfloat:
      return t.bits == 16 ? std::optional(DType::bf16) : std::nullopt;
    case kDLInt:
      return t.bits == 32 ? std::optional(DType::i32) : t.bits == 8 ? std::optional(DType::i8) : std::nullopt;
    case kDLUInt:
      return t.bits == 32 ? std::optional(DType::u32) : t.bits == 8 ? std::optional(DType::u8) : std::nullopt;
    default:
      return std::nullopt;
  }
}

DLDataType dl_of(DType d) {
  const auto bits = static_cast<std::uint8_t>(dtype_size(d) * 8);
  switch (d) {
    case DType::f32:
    case DType::f64:
    case DType::f16:
      return {kDLFloat, bits, 1};
    case DType::bf16:
      return {kDLBfloat, bits, 1};
    case DType::i32:
    case DType::i8:
      return {kDLInt, bits, 1};
    case DType::u32:
    case DType::u8:
      return {kDLUInt, bits, 1};
  }
  return {kDLUInt, bits, 1};
}

std::string dl_type_name(DLDataType t) {
  const char* code = t.code == kDLFloat    ? "float"
                     : t.code == kDLInt    ? "int"
                     : t.code == kDLUInt   ? "uint"
                     : t.code == kDLBfloat ? "bfloat"
                                           : "code";
  return std::string(code) + std::to_string(t.bits) + (t.lanes != 1 ? "x" + std::to_string(t.lanes) : "");
}

}  // namespace

DType dtype_arg(py::handle obj, std::string_view what) {
  if (py::isinstance<py::str>(obj)) {
    const std::string s = obj.cast<std::string>();
    if (auto d = parse_dtype(s)) return *d;
    // numpy's spellings of the native types ("f4", "<f4", "int32"…) through numpy itself.
  }
  py::dtype dt;
  try {
    dt = py::dtype::from_args(py::reinterpret_borrow<py::object>(obj));
  } catch (const py::error_already_set&) {
    fail_dtype(what, "'" + text(obj) + "'");
  }
  if (auto d = find_vgpu_dtype(dt)) return *d;
  fail_dtype(what, text(dt));
}

py::object dtype_object(DType d) {
  if (d == DType::bf16) return py::str("bfloat16");
  return numpy_dtype(d);
}

Array host_array(py::handle obj, const Device& device, std::optional<DType> dtype, CopyMode copy,
                 std::string_view what) {
  run_pending(nullptr);
  py::array arr;
  if (dtype) {
    arr = input_array(obj, *dtype, what);
  } else {
    if (obj.is_none())
      fail(ErrorCategory::invalid_argument, std::string(what) + " is None.", "pass a numpy array or array-like.");
    arr = py::isinstance<py::array>(obj) ? py::reinterpret_borrow<py::array>(obj)
                                         : py::array(py::module_::import("numpy").attr("asarray")(obj));
    const std::optional<DType> own = find_vgpu_dtype(arr.dtype());
    if (!own)
      fail(ErrorCategory::invalid_argument,
           std::string(what) + " has dtype " + text(arr.dtype()) + ", which vgpu arrays do not hold.",
           "pass dtype= (e.g. dtype=\"float32\") to convert it, or convert it yourself with .astype().");
    arr = input_array(arr, *own, what);  // C-contiguous (a copy only when it was not)
    dtype = own;
  }
  const Shape shape = shape_of(arr);
  const bool converted = !arr.is(obj);
  // numpy's memory in place: on a device whose memory is host memory (the CPU) unless a copy
  // is asked for; on one that reaches host memory over the bus (CUDA registers and maps it)
  // only with copy=False. Kernels load whole elements, and may write any array.
  const bool usable = (arr.flags() & py::array::c_style) && arr.writeable() &&
                      reinterpret_cast<std::uintptr_t>(arr.data()) % dtype_size(*dtype) == 0 &&
                      element_count(shape) != 0;
  const bool host_device = Array::uses_host_memory(device);
  std::string refused;  // why the device would not take this memory in place
  if (usable && copy != CopyMode::always && (host_device || (copy == CopyMode::never && !converted))) {
    // The reference is the array's only once it exists: a refused import never runs release.
    PyObject* ref = arr.inc_ref().ptr();
    try {
      return Array::from_external(device, arr.mutable_data(), *dtype, shape,
                                  [ref] { with_gil_soon([ref] { Py_DECREF(ref); }); });
    } catch (const Error& e) {
      Py_DECREF(ref);
      if (e.category() != ErrorCategory::not_supported) throw;
      refused = e.problem();  // said below (a Vulkan driver's alignment, an OpenGL device's own memory)
    }
  }
  if (copy == CopyMode::never && !converted)
    fail(ErrorCategory::invalid_argument,
         std::string(what) + " cannot be used in place on " + device.info().id() +
             " (copy=False): " + (!refused.empty() ? refused : std::string("it is read-only, misaligned or empty.")),
         "allow a copy (copy=None), or use a writeable, aligned array (docs/arrays.md says which devices use host "
         "memory in place).");
  const void* data = arr.data();
  py::gil_scoped_release release;  // arr keeps the memory alive; the copy may be large
  return Array::from_host(device, *dtype, shape, data);
}

Array array_arg(py::handle obj, std::optional<Device> device, std::optional<DType> dtype, CopyMode copy,
                std::string_view what) {
  if (py::isinstance<Array>(obj)) {
    const Array& a = obj.cast<const Array&>();
    if (device && !(a.device() == *device))
      fail(ErrorCategory::invalid_argument,
           std::string(what) + " is " + a.describe() + ", not on " + device->info().id() +
               "; vgpu never moves arrays between devices silently.",
           "move it with .to(device) first.");
    if (dtype && *dtype != a.dtype())
      fail(ErrorCategory::invalid_argument,
           std::string(what) + " is " + a.describe() + ", not of dtype " + std::string(np_name(*dtype)) +
               "; vgpu arrays are not converted silently.",
           a.dtype() == DType::bf16
               // numpy has no bfloat16: its bits widen to float32 by a 16-bit shift.
               ? "convert it on the host: vgpu.asarray((x.numpy(bits=True).astype(numpy.uint32) << 16).view("
                 "numpy.float32).astype(numpy." +
                     std::string(np_name(*dtype)) + "), device=x.device)."
               : "convert it on the host: vgpu.asarray(x.numpy().astype(numpy." + std::string(np_name(*dtype)) +
                     "), device=x.device).");
    if (copy == CopyMode::always) {
      py::gil_scoped_release release;
      return a.copy();
    }
    return a;
  }
  const Device dev = device ? *device : Runtime::global().default_device();
  if (!py::isinstance<py::array>(obj) && py::hasattr(obj, "__dlpack__") && !dtype) {
    // DLPack first: zero-copy where the producer's memory is what dev uses; otherwise the copy
    // numpy's own conversion makes (__array__), said in docs/arrays.md.
    if (copy != CopyMode::always) {
      py::tuple where = obj.attr("__dlpack_device__")();
      const int type = where[0].cast<int>();
      if (type == kDLCPU && Array::uses_host_memory(dev)) return from_dlpack(obj, dev);
    }
  }
  return host_array(obj, dev, dtype, copy, what);
}

void settle(const Array& a) {
  if (Array::uses_host_memory(a.device())) return;  // the CPU device's calls finish before they return
  Device d = a.device();
  py::gil_scoped_release release;
  d.synchronize();
}

py::array numpy_of(const Array& a, bool bits) {
  const py::dtype dt = bits ? host_dtype(a.dtype()) : numpy_dtype(a.dtype());
  std::vector<py::ssize_t> dims(a.shape().begin(), a.shape().end());
  if (a.memory() == ArrayMemory::host && a.size() != 0) {
    settle(a);
    // A view of the array's own memory; the capsule keeps the array alive as the view's base.
    auto* keep = new Array(a);
    py::capsule base(keep, [](void* p) { delete static_cast<Array*>(p); });
    return py::array(dt, dims, {}, a.data(), base);
  }
  py::array out(dt, dims);
  void* p = out.mutable_data();
  py::gil_scoped_release release;
  a.read(p);
  return out;
}

namespace {

template <class Managed>
py::capsule export_capsule(const Array& a, std::uint64_t flags) {
  auto e = std::make_unique<Exported<Managed>>();
  e->array = a;
  e->shape.assign(a.shape().begin(), a.shape().end());
  DLTensor& t = e->managed.dl_tensor;
  t.data = a.data();
  t.device = a.memory() == ArrayMemory::host ? DLDevice{kDLCPU, 0}
                                             : DLDevice{kDLCUDA, static_cast<std::int32_t>(a.device().info().index)};
  t.ndim = static_cast<std::int32_t>(e->shape.size());
  t.dtype = dl_of(a.dtype());
  t.shape = e->shape.data();
  t.strides = nullptr;  // C-contiguous
  t.byte_offset = 0;
  e->managed.manager_ctx = e.get();
  e->managed.deleter = &delete_exported<Managed>;
  if constexpr (std::is_same_v<Managed, DLManagedTensorVersioned>) {
    e->managed.version = kDlpackVersion;
    e->managed.flags = flags;
  }
  // The consumer's stream knows nothing of vgpu's: the data is complete before it is handed over.
  settle(a);
  PyObject* cap = PyCapsule_New(&e->managed, kCapsuleName<Managed>, &capsule_destructor<Managed>);
  if (!cap) throw py::error_already_set();
  e.release();
  return py::reinterpret_steal<py::capsule>(cap);
}

}  // namespace

py::capsule to_dlpack(const Array& a, bool versioned, bool copied) {
  if (a.memory() == ArrayMemory::device_only)
    fail(ErrorCategory::not_supported,
         a.describe() + " lives in " + std::string(to_string(a.device().info().backend)) +
             " memory, which no DLPack consumer can address.",
         "copy it to the host first: arr.to(\"cpu:0\") (zero-copy from there) or arr.numpy().");
  if (versioned) return export_capsule<DLManagedTensorVersioned>(a, copied ? DLPACK_FLAG_BITMASK_IS_COPIED : 0);
  return export_capsule<DLManagedTensor>(a, 0);
}

Array from_dlpack(py::handle obj, std::optional<Device> device) {
  run_pending(nullptr);
  py::object cap;
  std::optional<Device> cuda;  // the CUDA device a producer's CUDA tensor is imported on
  if (PyCapsule_CheckExact(obj.ptr())) {
    cap = py::reinterpret_borrow<py::object>(obj);
  } else if (py::hasattr(obj, "__dlpack__")) {
    int type = kDLCPU, id = 0;
    // Where the tensor is decides the stream argument. A torch tensor says it is not a CUDA
    // tensor (is_cuda, a C property) far sooner than its __dlpack_device__ (Python code, about
    // as long as the rest of the import): then no stream is passed, and the capsule says where
    // the data is in any case.
    const py::object is_cuda = py::getattr(obj, "is_cuda", py::none());
    const bool not_cuda = py::isinstance<py::bool_>(is_cuda) && !is_cuda.cast<bool>();
    if (!not_cuda && py::hasattr(obj, "__dlpack_device__")) {
      py::tuple where = obj.attr("__dlpack_device__")();
      type = where[0].cast<int>();
      id = where[1].cast<int>();
    }
    std::uintptr_t stream = 0;
    if (type == kDLCUDA) {
      // The producer orders its pending work before vgpu's stream (DLPack's stream argument),
      // so vgpu's kernels read the tensor's final values without a full synchronize.
      cuda = device ? *device : Array::device_for(ArrayMemory::cuda_device, static_cast<std::uint32_t>(id));
      // (A device without a stream — one that cannot take the memory anyway — asks for none.)
      stream = cuda->native_stream();
    }
    // The keyword arguments of __dlpack__: built once for the common call (no stream), since
    // the import as a whole takes a few microseconds.
    static PyObject* const kVersionedOnly = [] {
      py::dict d;
      d["max_version"] = py::make_tuple(kDlpackVersion.major, kDlpackVersion.minor);
      return d.release().ptr();  // never released: Python may be gone at exit
    }();
    auto call = [&](bool versioned) {
      py::dict kwargs = versioned && !stream ? py::reinterpret_borrow<py::dict>(kVersionedOnly) : py::dict();
      if (stream) {
        kwargs["stream"] = py::int_(stream);
        if (versioned) kwargs["max_version"] = py::make_tuple(kDlpackVersion.major, kDlpackVersion.minor);
      }
      const py::object method = obj.attr("__dlpack__");
      PyObject* r = PyObject_Call(method.ptr(), py::tuple().ptr(), kwargs.ptr());
      if (!r) throw py::error_already_set();
      return py::reinterpret_steal<py::object>(r);
    };
    // A versioned capsule where the producer makes one (it says whether the memory is read-only).
    const py::handle producer_type = py::type::handle_of(obj);
    PyObject* support = max_version_support().ptr();
    PyObject* takes = PyDict_GetItem(support, producer_type.ptr());  // borrowed; null: not asked yet
    auto remember = [&](PyObject* answer) {
      // Bounded: a program making producer classes on the fly must not grow it for ever.
      if (PyDict_Size(support) >= 1024) PyDict_Clear(support);
      if (PyDict_SetItem(support, producer_type.ptr(), answer) != 0) PyErr_Clear();  // asked again next time
    };
    if (takes == nullptr || takes == Py_True) {
      try {
        cap = call(true);
        if (!takes) remember(Py_True);
      } catch (py::error_already_set& e) {
        if (takes || !e.matches(PyExc_TypeError)) throw;
        remember(Py_False);  // a DLPack 0.x producer: no max_version keyword
      }
    }
    if (!cap) cap = call(false);
  } else {
    fail(ErrorCategory::invalid_argument,
         "from_dlpack got a " + text(py::type::handle_of(obj).attr("__name__")) +
             ", which does not export DLPack (__dlpack__).",
         "pass a torch tensor, a numpy array (≥ 1.22), a CuPy/JAX array or a DLPack capsule.");
  }
  // The tensor, and how to hand it back to its producer: an unversioned or a versioned capsule.
  const DLTensor* tensor = nullptr;
  std::function<void()> release;
  const char* used = nullptr;
  if (PyCapsule_IsValid(cap.ptr(), "dltensor")) {
    auto* mt = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
    tensor = &mt->dl_tensor;
    release = [mt] {
      if (mt->deleter) mt->deleter(mt);
    };
    used = "used_dltensor";
  } else if (PyCapsule_IsValid(cap.ptr(), "dltensor_versioned")) {
    auto* mv = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(cap.ptr(), "dltensor_versioned"));
    if (mv->version.major != kDlpackVersion.major)
      fail(ErrorCategory::not_supported,
           "from_dlpack got a DLPack " + std::to_string(mv->version.major) + "." + std::to_string(mv->version.minor) +
               " tensor; vgpu reads DLPack 1.x.",
           "ask the producer for DLPack 1.0 (x.__dlpack__(max_version=(1, 0))), or pass the producer itself.");
    if (mv->flags & DLPACK_FLAG_BITMASK_READ_ONLY)
      fail(ErrorCategory::not_supported,
           "from_dlpack got a read-only tensor; a vgpu array over it could be written by kernels.",
           "copy it in with vgpu.asarray(x, device=...), or make it writeable first (numpy: x.copy()).");
    tensor = &mv->dl_tensor;
    release = [mv] {
      if (mv->deleter) mv->deleter(mv);
    };
    used = "used_dltensor_versioned";
  } else {
    fail(ErrorCategory::invalid_argument,
         "from_dlpack got a capsule that is not an unused \"dltensor\" or \"dltensor_versioned\" (it was consumed "
         "already).",
         "pass the producer itself (x, not x.__dlpack__()), or a fresh capsule; each one is consumed once.");
  }
  const DLTensor& t = *tensor;
  const std::optional<DType> dtype = dtype_of_dl(t.dtype);
  if (!dtype)
    fail(ErrorCategory::not_supported,
         "from_dlpack: the tensor's dtype " + dl_type_name(t.dtype) + " is not one vgpu holds.",
         "convert it first (torch: x.to(torch.float32); numpy: x.astype(numpy.float32)).");
  Shape shape;
  for (int i = 0; i < t.ndim; ++i) shape.push_back(static_cast<std::uint64_t>(t.shape[i]));
  if (t.strides) {
    std::int64_t want = 1;
    for (int i = t.ndim; i-- > 0;) {
      if (t.shape[i] != 1 && t.strides[i] != want)
        fail(ErrorCategory::invalid_argument,
             "from_dlpack: the tensor is not C-contiguous (shape " + to_string(shape) +
                 "); vgpu arrays are dense and row-major, and a copy would not be zero-copy.",
             "make it contiguous first (torch: x.contiguous(); numpy: numpy.ascontiguousarray(x)), or use "
             "vgpu.asarray(x), which copies.");
      want *= t.shape[i];
    }
  }
  Device dev;
  switch (t.device.device_type) {
    case kDLCPU:
      // The CPU device uses host memory in place; a CUDA device registers it (page-locked and
      // mapped, kernels reach it over the bus); others refuse it (below, from from_external).
      dev = device ? *device : Array::device_for(ArrayMemory::host, 0);
      break;
    case kDLCUDA:
      // A device given that is not that GPU's CUDA device refuses the memory (from_external's Fix).
      dev = cuda     ? *cuda
            : device ? *device
                     : Array::device_for(ArrayMemory::cuda_device, static_cast<std::uint32_t>(t.device.device_id));
      break;
    default:
      fail(ErrorCategory::not_supported,
           "from_dlpack: the tensor is on DLPack device type " + std::to_string(t.device.device_type) +
               ", which vgpu does not import.",
           "copy it to the host first.");
  }
  if (element_count(shape) == 0) return Array::empty(dev, *dtype, shape);  // the capsule frees the tensor
  void* data = static_cast<char*>(t.data) + t.byte_offset;
  const ArrayMemory memory = t.device.device_type == kDLCUDA ? ArrayMemory::cuda_device : ArrayMemory::host;
  Array a;
  try {
    a = Array::from_external(
        dev, data, *dtype, shape,
        [release] {
          // The producer's deleter may touch Python objects (numpy's does): run it with the GIL.
          with_gil_soon(release);
        },
        memory);
  } catch (const Error& e) {
    // Refused (the capsule keeps the tensor: its destructor frees it, release never ran).
    if (e.category() != ErrorCategory::not_supported || memory != ArrayMemory::host) throw;
    fail(ErrorCategory::not_supported, "from_dlpack: the tensor is in host memory: " + e.problem(),
         "import it on the cpu device (device=\"cpu:0\") and move it with .to(device), or use vgpu.asarray(x, "
         "device=...), which copies.");
  }
  PyCapsule_SetName(cap.ptr(), used);  // consumed: its destructor leaves the tensor to us
  return a;
}

namespace {

// The vgpu dtype an operand holds without conversion: a vgpu.Array's, or a numpy array's when
// vgpu has that dtype (nothing for lists, float64 arrays of other kinds…).
std::optional<DType> operand_vgpu_dtype(py::handle x) {
  if (py::isinstance<Array>(x)) return x.cast<const Array&>().dtype();
  if (py::isinstance<py::array>(x)) return find_vgpu_dtype(py::reinterpret_borrow<py::array>(x).dtype());
  return std::nullopt;
}

}  // namespace

DType matmul_compute_dtype(py::handle a, py::handle b, py::handle cast, std::string_view op) {
  if (!cast.is_none()) {
    const DType c = dtype_arg(cast, "dtype");
    if (!is_float(c) || c == DType::f64)
      fail(ErrorCategory::not_supported,
           std::string(op) + " computes on float32, float16 and bfloat16; dtype=" + std::string(np_name(c)) +
               " cannot be honoured.",
           "pass dtype=\"float32\", \"float16\" or \"bfloat16\" (the inputs are converted to it and the result has "
           "it).");
    return c;
  }
  const std::optional<DType> da = operand_vgpu_dtype(a), db = operand_vgpu_dtype(b);
  if (da && db && *da == DType::f32 && *db == DType::f32) return DType::f32;  // the common case, without numpy
  std::string name;
  if (da && db) {
    // vgpu's promotion: numpy's, with torch's rule for bfloat16 (numpy has none).
    const std::optional<DType> r = promote_types(*da, *db);
    name = r ? std::string(np_name(*r)) : "a dtype vgpu does not hold (int16 or int64)";
    if (r && (*r == DType::f32 || *r == DType::f16 || *r == DType::bf16)) return *r;
  } else {
    py::object r;
    try {
      r = py::module_::import("numpy").attr("result_type")(operand_dtype(a), operand_dtype(b));
    } catch (const py::error_already_set& e) {
      fail(ErrorCategory::invalid_argument,
           std::string(op) + ": the operands have no common numpy dtype (" + e.what() + ").", "pass numeric arrays.");
    }
    name = text(r);
    const char kind = py::isinstance<py::dtype>(r) ? py::reinterpret_borrow<py::dtype>(r).kind() : 'f';
    if (kind == 'b' || kind == 'c' || kind == 'O' || kind == 'U' || kind == 'S' || kind == 'M' || kind == 'm')
      fail(ErrorCategory::invalid_argument,
           std::string(op) + ": the operands' dtype is " + name + "; vgpu multiplies real numbers only.",
           "pass real numeric arrays (e.g. x.astype(numpy.float32)).");
    if (name == "float32") return DType::f32;
    if (name == "float16") return DType::f16;
  }
  fail(ErrorCategory::not_supported,
       std::string(op) + ": numpy's result dtype for these operands is " + name +
           ", but vgpu computes matmul on float32, float16 and bfloat16 only and never downcasts silently.",
       "pass dtype=\"float32\" to compute in float32 (the inputs are converted, the result is float32), or cast the "
       "inputs yourself (x.astype(numpy.float32)).");
}

}  // namespace vgpu::python
