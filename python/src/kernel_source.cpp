// SPDX-License-Identifier: Apache-2.0
// python/src/kernel_source.cpp — user kernel sources from Python and the Python CPU kernel
// bridge (the rules are in kernel_source.hpp).
#include "kernel_source.hpp"

#include "errors.hpp"

#include <pybind11/numpy.h>

#include <cstring>
#include <limits>
#include <vector>

#include "arrays.hpp"
#include "int_args.hpp"
#include "vgpu/error.hpp"

namespace py = pybind11;

namespace vgpu::python {
namespace {

thread_local int t_inside_callable = 0;

std::string type_name(py::handle obj) { return py::str(obj.get_type().attr("__name__")).cast<std::string>(); }

std::uint32_t to_u32(py::handle obj, const std::string& what) { return u32_arg(obj, what); }

// A Python int, bool, float or numpy scalar as a specialization-constant value.
SpecValue spec_value(py::handle v, const std::string& what) {
  if (py::isinstance<py::bool_>(v) ||
      (py::hasattr(v, "dtype") && py::str(v.attr("dtype")).cast<std::string>() == "bool"))
    return SpecValue::of(v.cast<bool>());
  if (py::hasattr(v, "dtype") && !py::isinstance<py::array>(v)) {  // a numpy scalar keeps its type
    const std::string t = py::str(v.attr("dtype")).cast<std::string>();
    if (t == "float32") return SpecValue::of(v.cast<float>());
    if (t == "int32") return SpecValue::of(v.cast<std::int32_t>());
    if (t == "uint32") return SpecValue::of(v.cast<std::uint32_t>());
  }
  if (py::isinstance<py::float_>(v)) return SpecValue::of(v.cast<double>());
  if (py::isinstance<py::int_>(v)) {
    const py::int_ i = py::reinterpret_borrow<py::int_>(v);
    long long x = 0;
    try {
      x = i.cast<long long>();
    } catch (const py::cast_error&) {
      x = std::numeric_limits<long long>::max();
    }
    if (x >= std::numeric_limits<std::int32_t>::min() && x <= std::numeric_limits<std::int32_t>::max())
      return SpecValue::of(static_cast<std::int32_t>(x));
    if (x > 0 && x <= 0xFFFFFFFFll) return SpecValue::of(static_cast<std::uint32_t>(x));
    fail(ErrorCategory::invalid_argument,
         what + " is " + py::str(v).cast<std::string>() + ", which no 32-bit constant holds.",
         "pass a value in -2147483648..4294967295.");
  }
  fail(ErrorCategory::invalid_argument,
       what + " is a " + type_name(v) + "; specialization constants are bool, int or float.",
       "pass True/False, an int (numpy.uint32/int32 to fix the type) or a float.");
}

std::string text_arg(py::handle obj, const std::string& what) {
  if (!py::isinstance<py::str>(obj))
    fail(ErrorCategory::invalid_argument, what + " is a " + type_name(obj) + ", not a str.",
         "pass the source text as a str.");
  return obj.cast<std::string>();
}

// The Python view of one CpuWorkgroup, valid only while its callable runs.
struct Workgroup {
  const CpuWorkgroup* wg = nullptr;
  const CpuCallback* callback = nullptr;
  /// What owns the buffers the views point into (a PersistentKernel), kept alive with them:
  /// a view kept by mistake then reads stale data, never freed memory.
  std::shared_ptr<const void> keep;

  const CpuWorkgroup& get() const {
    if (!wg)
      fail(ErrorCategory::invalid_argument, "this vgpu.CpuWorkgroup was used after its call returned.",
           "use the workgroup (and copies of its buffers, not the views) only inside the kernel's callable.");
    return *wg;
  }
};

py::tuple triple(const std::array<std::uint32_t, 3>& a) { return py::make_tuple(a[0], a[1], a[2]); }

py::array buffer_view(py::object self, py::handle slot_arg, py::handle dtype) {
  const Workgroup& w = self.cast<const Workgroup&>();
  const CpuWorkgroup& wg = w.get();
  const std::uint32_t slot = u32_arg(slot_arg, "slot");
  if (slot >= wg.buffers.size() || !wg.buffers[slot].data)
    fail(ErrorCategory::invalid_argument, "slot " + std::to_string(slot) + " has no buffer bound in this dispatch.",
         "ask for a slot the kernel's step binds (its tensors' slots).");
  const CpuBufferView& b = wg.buffers[slot];
  DType d = w.callback->default_dtype;
  Shape shape;
  if (!dtype.is_none()) {
    d = parse_dtype(dtype, "dtype");
  } else if (auto it = w.callback->slot_views.find(slot); it != w.callback->slot_views.end()) {
    d = it->second.first;
    shape = it->second.second;
  }
  const std::uint64_t item = dtype_size(d);
  if (shape.empty() || tensor_bytes(shape, d) > b.bytes) shape = {b.bytes / item};
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  return py::array(numpy_dtype(d), dims, b.data, self);  // a view: no copy, self as its base
}

}  // namespace

CpuCallback::~CpuCallback() {
  // Dropped wherever the kernel's last copy goes (a device's retire list, too): take the GIL
  // to drop the references, unless Python is already gone (then leak them).
#if PY_VERSION_HEX >= 0x030D0000
  const bool finalizing = Py_IsFinalizing();
#else
  const bool finalizing = _Py_IsFinalizing();
#endif
  if (!Py_IsInitialized() || finalizing) {
    fn.release();
    if (error) new py::error_already_set(std::move(*error));  // leaked on purpose
    return;
  }
  py::gil_scoped_acquire gil;
  fn = py::object();
  error.reset();
}

bool inside_cpu_callable() noexcept { return t_inside_callable > 0; }

void refuse_inside_cpu_callable(const std::string& what) {
  if (inside_cpu_callable())
    fail(ErrorCategory::invalid_argument,
         what + " was made from inside a Python CPU kernel's callable, which would wait for the call it runs in.",
         "compute inside the callable with numpy on its buffers; call vgpu kernels before or after the dispatch.");
}

DType parse_dtype(py::handle obj, const std::string& what) {
  if (py::isinstance<py::str>(obj)) {
    const std::string s = obj.cast<std::string>();
    if (s == "float32" || s == "f32" || s == "f4" || s == "<f4") return DType::f32;
    if (s == "int32" || s == "i32" || s == "i4" || s == "<i4") return DType::i32;
    if (s == "uint32" || s == "u32" || s == "u4" || s == "<u4") return DType::u32;
    fail(ErrorCategory::invalid_argument, what + " is '" + s + "', not a dtype vgpu kernels take.",
         "use \"float32\", \"int32\" or \"uint32\".");
  }
  py::dtype dt;
  try {
    dt = py::dtype::from_args(py::reinterpret_borrow<py::object>(obj));
  } catch (const py::error_already_set&) {
    fail(ErrorCategory::invalid_argument, what + " (a " + type_name(obj) + ") is not a dtype.",
         "use \"float32\", \"int32\", \"uint32\" or numpy.float32 / numpy.int32 / numpy.uint32.");
  }
  return vgpu_dtype(dt, what);
}

Access parse_access(py::handle obj, const std::string& what) {
  const std::string s = py::isinstance<py::str>(obj) ? obj.cast<std::string>() : std::string();
  if (s == "read") return Access::read;
  if (s == "write") return Access::write;
  if (s == "read_write") return Access::read_write;
  fail(ErrorCategory::invalid_argument, what + " is " + py::repr(obj).cast<std::string>() + ", not an access.",
       "use \"read\", \"write\" or \"read_write\".");
}

std::string buffer_bytes(py::handle obj, const std::string& what) {
  if (py::isinstance<py::str>(obj))
    fail(ErrorCategory::invalid_argument, what + " is a str; vgpu takes bytes, not text.",
         "encode it (s.encode()) or pass bytes, a bytearray, a memoryview or a numpy array.");
  if (!PyObject_CheckBuffer(obj.ptr()))
    fail(ErrorCategory::invalid_argument, what + " is a " + type_name(obj) + ", which holds no bytes.",
         "pass bytes, a bytearray, a memoryview or a C-contiguous numpy array.");
  Py_buffer view;
  if (PyObject_GetBuffer(obj.ptr(), &view, PyBUF_C_CONTIGUOUS) != 0) {
    PyErr_Clear();
    fail(ErrorCategory::invalid_argument, what + " (a " + type_name(obj) + ") is not C-contiguous.",
         "pass a contiguous copy (numpy.ascontiguousarray(x) or bytes(x)).");
  }
  std::string bytes(static_cast<const char*>(view.buf), static_cast<std::size_t>(view.len));
  PyBuffer_Release(&view);
  return bytes;
}

ParamsBlock params_block(py::handle obj, const std::string& what) {
  if (obj.is_none()) return ParamsBlock();
  const std::string bytes = buffer_bytes(obj, what);
  if (bytes.size() > kMaxParamsBytes)
    fail(ErrorCategory::invalid_argument,
         what + " has " + std::to_string(bytes.size()) + " bytes; a params block holds at most 128.",
         "move the larger data into a tensor.");
  return bytes.empty() ? ParamsBlock() : ParamsBlock(bytes.data(), bytes.size());
}

UserSource user_source(const std::string& name, py::handle glsl, py::handle glsl_shader, py::handle spirv,
                       py::handle cuda, py::handle entry, py::handle cpu, py::handle defines, py::handle workgroup_size,
                       py::handle spec_constants) {
  UserSource u;
  u.source.name = name;
  const std::string entry_name = entry.is_none() ? std::string() : text_arg(entry, "entry");
  if (!glsl.is_none()) {  // vgpu's body form: its bindings are declared, not reflected
    u.source.add_glsl(text_arg(glsl, "glsl"));
    u.reflected_only = false;
  }
  if (!glsl_shader.is_none())
    u.source.add_glsl_shader(text_arg(glsl_shader, "glsl_shader"), entry_name.empty() ? "main" : entry_name);
  if (!spirv.is_none()) {
    std::string bytes;
    if (py::isinstance<py::array>(spirv)) {
      py::array a = py::reinterpret_borrow<py::array>(spirv);
      if (!a.dtype().equal(py::dtype::of<std::uint32_t>()))
        fail(ErrorCategory::invalid_argument,
             "spirv is a numpy array of dtype " + py::str(a.dtype()).cast<std::string>() + "; SPIR-V words are uint32.",
             "pass numpy.uint32 words, or the .spv file's bytes.");
    }
    bytes = buffer_bytes(spirv, "spirv");
    if (bytes.empty() || bytes.size() % 4 != 0)
      fail(ErrorCategory::invalid_argument,
           "spirv has " + std::to_string(bytes.size()) +
               " bytes; a SPIR-V module is a non-empty whole number of 32-bit words.",
           "pass the whole .spv file (e.g. open(path, 'rb').read()).");
    std::vector<std::uint32_t> words(bytes.size() / 4);
    std::memcpy(words.data(), bytes.data(), bytes.size());
    u.source.add_spirv(words, entry_name.empty() ? "main" : entry_name);
  }
  if (!cuda.is_none()) {
    if (entry_name.empty())
      fail(ErrorCategory::invalid_argument, "cuda= was given without entry=.",
           "name the extern \"C\" __global__ function to run, e.g. entry=\"scale\".");
    u.source.add_cuda(text_arg(cuda, "cuda"), entry_name);
    u.reflected_only = false;
  }
  if (!cpu.is_none()) {
    if (!PyCallable_Check(cpu.ptr()))
      fail(ErrorCategory::invalid_argument, "cpu= is a " + type_name(cpu) + ", not a callable.",
           "pass a function taking one vgpu.CpuWorkgroup, called once per workgroup.");
    auto cb = std::make_shared<CpuCallback>();
    cb->fn = py::reinterpret_borrow<py::object>(cpu);
    u.callback = cb;
    // Each Python callable is its own kernel: the version tells it apart from others of the same
    // name in every cache keyed by (name, version) (vgpu::run's pipelines).
    static std::atomic<std::uint64_t> serial{0};
    const std::string version = "python-" + std::to_string(++serial);
    u.source.add_cpu(
        [cb](const CpuWorkgroup& wg) {
          if (cb->failed.load(std::memory_order_relaxed))
            fail(ErrorCategory::invalid_argument, "the Python CPU kernel's callable raised an exception.",
                 "see the exception the call re-raised.");
          py::gil_scoped_acquire gil;
          if (cb->failed.load())
            fail(ErrorCategory::invalid_argument, "the Python CPU kernel's callable raised an exception.",
                 "see the exception the call re-raised.");
          py::object w = py::cast(Workgroup{&wg, cb.get(), cb->owner.lock()});
          ++t_inside_callable;
          try {
            cb->fn(w);
          } catch (py::error_already_set& e) {
            --t_inside_callable;
            w.cast<Workgroup&>().wg = nullptr;
            if (!cb->failed.exchange(true)) cb->error = std::move(e);
            fail(ErrorCategory::invalid_argument, "the Python CPU kernel's callable raised an exception.",
                 "see the exception the call re-raised.");
          } catch (...) {
            --t_inside_callable;
            w.cast<Workgroup&>().wg = nullptr;
            throw;
          }
          --t_inside_callable;
          w.cast<Workgroup&>().wg = nullptr;
          // Only w itself should hold the workgroup now: every buffer view has it as its base, so
          // a higher count means the callable kept the workgroup or a view past its workgroup.
          // Such a view points into the kernel's buffers, which the next call overwrites (the
          // workgroup keeps a PersistentKernel's alive, see Workgroup::keep): refuse the call.
          if (w.ref_count() > 1) {
            raise_error(Error(ErrorCategory::invalid_argument,
                              "the Python CPU kernel's callable kept its vgpu.CpuWorkgroup or a buffer view from "
                              "it (wg.buffer(...)) after returning; such a view points into the kernel's buffers, "
                              "which the next call overwrites.",
                              "Keep copies (wg.buffer(0).copy()), never the workgroup or its views."));
            py::error_already_set kept;
            if (!cb->failed.exchange(true)) cb->error = std::move(kept);
            fail(ErrorCategory::invalid_argument, "the Python CPU kernel's callable kept a buffer view.",
                 "see the exception the call re-raised.");
          }
        },
        version);
    u.reflected_only = false;
  }
  if (u.source.sources.empty())
    fail(ErrorCategory::invalid_argument, "kernel '" + name + "' has no source.",
         "pass one or more of glsl= (a body under vgpu's prelude), glsl_shader= (a complete shader), spirv= (bytes), "
         "cuda= with entry=, or cpu= (a Python callable for the CPU device).");
  if (!defines.is_none()) {
    if (!py::isinstance<py::dict>(defines))
      fail(ErrorCategory::invalid_argument, "defines is a " + type_name(defines) + ", not a dict.",
           "pass {\"NAME\": value}; values become text (-DNAME=value).");
    for (auto [k, v] : py::reinterpret_borrow<py::dict>(defines))
      u.options.defines[py::str(k).cast<std::string>()] = v.is_none() ? std::string() : py::str(v).cast<std::string>();
  }
  if (!workgroup_size.is_none()) {
    py::sequence s = py::reinterpret_borrow<py::sequence>(workgroup_size);
    if (!py::isinstance<py::sequence>(workgroup_size) || s.size() < 1 || s.size() > 3)
      fail(ErrorCategory::invalid_argument, "workgroup_size must be a tuple of 1 to 3 integers.",
           "pass e.g. workgroup_size=(64,) or (16, 16, 1).");
    std::array<std::uint32_t, 3> ws{1, 1, 1};
    for (std::size_t i = 0; i < s.size(); ++i) {
      ws[i] = to_u32(s[i], "workgroup_size[" + std::to_string(i) + "]");
      if (ws[i] == 0)
        fail(ErrorCategory::invalid_argument, "workgroup_size[" + std::to_string(i) + "] is 0.",
             "give every dimension ≥ 1.");
    }
    u.options.workgroup_size = ws;
  }
  if (!spec_constants.is_none()) {
    if (!py::isinstance<py::dict>(spec_constants))
      fail(ErrorCategory::invalid_argument, "spec_constants is a " + type_name(spec_constants) + ", not a dict.",
           "pass {constant_id or \"name\": value}.");
    for (auto [k, v] : py::reinterpret_borrow<py::dict>(spec_constants)) {
      const std::string label = "spec_constants[" + py::repr(k).cast<std::string>() + "]";
      if (py::isinstance<py::str>(k))
        u.options.set_spec(SpecConstant{std::nullopt, k.cast<std::string>(), spec_value(v, label)});
      else
        u.options.set_spec(SpecConstant{to_u32(k, "a spec_constants key"), {}, spec_value(v, label)});
    }
  }
  return u;
}

void bind_workgroup(py::module_& m) {
  py::class_<Workgroup>(m, "CpuWorkgroup",
                        "What a Python CPU kernel (cpu=) receives for one workgroup: the same ABI GPU kernels get "
                        "(buffers by binding slot, the params block, workgroup ids). Valid only during its call; "
                        "buffer() views point into the kernel's device memory, so copy what you keep.")
      .def_property_readonly(
          "workgroup_id", [](const Workgroup& w) { return triple(w.get().workgroup_id); },
          "This workgroup's id (x, y, z).")
      .def_property_readonly(
          "num_workgroups", [](const Workgroup& w) { return triple(w.get().num_workgroups); },
          "The dispatch's group counts (x, y, z).")
      .def_property_readonly(
          "workgroup_size", [](const Workgroup& w) { return triple(w.get().workgroup_size); },
          "The local size (x, y, z): invocations of one workgroup.")
      .def_property_readonly(
          "global_offset",
          [](const Workgroup& w) {
            const CpuWorkgroup& g = w.get();
            return py::make_tuple(g.workgroup_id[0] * g.workgroup_size[0], g.workgroup_id[1] * g.workgroup_size[1],
                                  g.workgroup_id[2] * g.workgroup_size[2]);
          },
          "The global id of this workgroup's first invocation: workgroup_id * workgroup_size.")
      .def_property_readonly(
          "params",
          [](const Workgroup& w) {
            const CpuWorkgroup& g = w.get();
            // The dispatch's params block: its bytes (the kernel's params, as passed).
            return g.params ? py::bytes(static_cast<const char*>(g.params), kMaxParamsBytes) : py::bytes();
          },
          "The dispatch's params block (128 bytes; the first ones are the params passed).")
      .def("buffer", &buffer_view, py::arg("slot"), py::arg("dtype") = py::none(),
           "Returns the buffer at binding slot as a numpy view (no copy): with the tensor's dtype and shape "
           "when the plan binds one tensor there, else 1-D of dtype (default uint32). Writes go to the device.")
      .def(
          "spec",
          [](const Workgroup& w, py::handle key, py::object fallback) -> py::object {
            const CpuWorkgroup& g = w.get();
            for (const SpecConstant& c : g.spec_constants) {
              const bool match = py::isinstance<py::str>(key) ? (!c.id && c.name == key.cast<std::string>())
                                                              : (c.id && *c.id == u32_arg(key, "a spec constant id"));
              if (!match) continue;
              switch (c.value.type) {
                case SpecValue::Type::boolean:
                  return py::bool_(c.value.bits != 0);
                case SpecValue::Type::i32:
                  return py::int_(static_cast<std::int32_t>(c.value.bits));
                case SpecValue::Type::u32:
                  return py::int_(c.value.bits);
                case SpecValue::Type::f32:
                  return py::float_(spec_as<float>(c.value));
              }
            }
            return fallback;
          },
          py::arg("key"), py::arg("fallback") = py::none(),
          "Returns the specialization constant set by id (int) or name (str), or fallback when the compile set none.")
      .def(
          "expired", [](const Workgroup& w) { return w.get().expired(); },
          "True once the call has run past its time limit: return early (no further workgroup starts).")
      .def("__repr__", [](const Workgroup& w) {
        if (!w.wg) return std::string("<vgpu.CpuWorkgroup (call over)>");
        const auto& g = *w.wg;
        return "<vgpu.CpuWorkgroup id=(" + std::to_string(g.workgroup_id[0]) + ", " +
               std::to_string(g.workgroup_id[1]) + ", " + std::to_string(g.workgroup_id[2]) + ") size=(" +
               std::to_string(g.workgroup_size[0]) + ", " + std::to_string(g.workgroup_size[1]) + ", " +
               std::to_string(g.workgroup_size[2]) + ")>";
      });
}

}  // namespace vgpu::python
