// SPDX-License-Identifier: Apache-2.0
// python/src/kernel_source.hpp — a user kernel's source and compile options from Python
// arguments (glsl=, glsl_shader=, spirv=, cuda= + entry=, cpu= callable, defines=,
// workgroup_size=, spec_constants=), shared by vgpu.PersistentKernel and vgpu.QueueKernel, and
// the bridge that runs a Python callable as a CPU kernel safely:
//   - each workgroup (on a oneTBB thread, or the caller's) takes the GIL for its call; the
//     thread that dispatches has released it (else the workgroups would wait for it forever);
//   - the first exception the callable raises is kept, stops the dispatch (no further
//     workgroup calls Python) and is re-raised, unchanged, to the caller once the call returns;
//   - one call at a time per callable (CpuCallback::call_mutex, taken without the GIL);
//   - a kernel call from inside the callable is refused (it would wait for itself);
//   - the callable's reference is dropped with the GIL held, wherever the last copy of the
//     kernel source goes (and leaked, not touched, once the interpreter is finalizing).
// Call every function here with the GIL held.
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "vgpu/kernel_source.hpp"
#include "vgpu/params.hpp"

namespace vgpu::python {

/// The Python callable of a cpu= kernel and the state of its calls.
struct CpuCallback {
  pybind11::object fn;
  std::mutex call_mutex;                             ///< held (without the GIL) for the whole kernel call
  std::atomic<bool> failed{false};                   ///< the callable raised during this call
  std::optional<pybind11::error_already_set> error;  ///< what it raised first (touched with the GIL only)
  /// What buffer(slot) returns without a dtype: the tensor's dtype and shape at that slot.
  std::map<std::uint32_t, std::pair<DType, Shape>> slot_views;
  DType default_dtype = DType::u32;  ///< for slots not in slot_views (1-D over the buffer)
  /// The PersistentKernel whose buffers the workgroups' views point into (set once it is built;
  /// empty for queue kernels, whose pipelines vgpu::run owns).
  std::weak_ptr<const void> owner;

  CpuCallback() = default;
  CpuCallback(const CpuCallback&) = delete;
  CpuCallback& operator=(const CpuCallback&) = delete;
  ~CpuCallback();
};

/// A user kernel's source and options, as parsed from Python.
struct UserSource {
  KernelSource source;
  CompileOptions options;
  std::shared_ptr<CpuCallback> callback;  ///< set for a cpu= callable
  /// True when every dialect given is reflected (a complete GLSL shader, SPIR-V): bindings and
  /// params size can then be left to reflection. A GLSL body, CUDA and CPU kernels declare them.
  bool reflected_only = true;
};

/// Builds name's source from the dialect arguments (each None when not given) and the
/// options; InvalidArgument for none given, bad SPIR-V bytes, a CUDA text without entry, a
/// non-callable cpu=, bad workgroup sizes or spec constant values.
UserSource user_source(const std::string& name, pybind11::handle glsl, pybind11::handle glsl_shader,
                       pybind11::handle spirv, pybind11::handle cuda, pybind11::handle entry, pybind11::handle cpu,
                       pybind11::handle defines, pybind11::handle workgroup_size, pybind11::handle spec_constants);

/// Returns the bytes of a C-contiguous buffer-protocol object (bytes, bytearray, memoryview,
/// numpy array); InvalidArgument naming what for anything else (str included).
std::string buffer_bytes(pybind11::handle obj, const std::string& what);
/// Returns obj (None, bytes-like, numpy array) as a params block (at most 128 bytes).
ParamsBlock params_block(pybind11::handle obj, const std::string& what);
/// Parses a dtype: "float32"/"f32", "int32"/"i32", "uint32"/"u32", or a numpy dtype or type.
DType parse_dtype(pybind11::handle obj, const std::string& what);
/// Parses an access: "read", "write" or "read_write".
Access parse_access(pybind11::handle obj, const std::string& what);

/// Runs call (a kernel call, with the GIL released by this function) with callback's
/// protocol when callback is set: one call at a time, and the callable's exception re-raised
/// (unchanged) after the call. Without a callback it only releases the GIL around call.
/// Refuses (InvalidArgument) a call made from inside a Python CPU kernel.
template <class F>
void run_released(const std::shared_ptr<CpuCallback>& callback, F&& call);

/// Adds vgpu.CpuWorkgroup (what a cpu= callable receives).
void bind_workgroup(pybind11::module_& m);

/// True on a thread that is running a Python CPU kernel's callable right now.
bool inside_cpu_callable() noexcept;
/// Throws InvalidArgument when inside_cpu_callable() (what: the call refused).
void refuse_inside_cpu_callable(const std::string& what);

template <class F>
void run_released(const std::shared_ptr<CpuCallback>& callback, F&& call) {
  refuse_inside_cpu_callable("a vgpu kernel call");
  if (!callback) {
    pybind11::gil_scoped_release release;
    call();
    return;
  }
  std::optional<pybind11::error_already_set> raised;
  {
    pybind11::gil_scoped_release release;
    std::lock_guard lock(callback->call_mutex);
    callback->failed.store(false);
    try {
      call();
    } catch (...) {
      if (!callback->failed.load()) throw;
      // The callable's own exception wins over vgpu's report of it. error is only touched with
      // the GIL, which workgroups held when they set it; the dispatch is over now.
      pybind11::gil_scoped_acquire gil;
      raised = std::move(callback->error);
      callback->error.reset();
    }
    if (!raised && callback->failed.load()) {  // raised but the call still returned: report it anyway
      pybind11::gil_scoped_acquire gil;
      raised = std::move(callback->error);
      callback->error.reset();
    }
  }
  if (raised) throw std::move(*raised);
}

}  // namespace vgpu::python
