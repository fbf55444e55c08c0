// SPDX-License-Identifier: Apache-2.0
// python/src/bindings.hpp — one function per part of the Python surface; module.cpp calls them
// in order (errors first: every later part raises through them).
#pragma once

#include <pybind11/pybind11.h>

namespace vgpu::python {

/// Adds vgpu.Error, its per-category subclasses and the C++ → Python error translation.
void bind_errors(pybind11::module_& m);
/// Routes vgpu's log to Python's logging (logger "vgpu") and adds set_log_level and log_to_stderr.
void bind_log(pybind11::module_& m);
/// Adds devices(), backends(), open(), select(), explain(), counters() and the Device type.
void bind_devices(pybind11::module_& m);
/// Adds vgpu.Array, asarray, empty, zeros, from_dlpack, matmul and the other ops on arrays.
void bind_arrays(pybind11::module_& m);
/// Adds vgpu.Cache (the seed's VGPUCache) and vgpu.KernelDatabase.
void bind_cache(pybind11::module_& m);
/// Adds vgpu.PersistentKernel (built-in ops and user kernels).
void bind_kernels(pybind11::module_& m);
/// Adds vgpu.PersistentQueue and vgpu.run().
void bind_queue(pybind11::module_& m);

}  // namespace vgpu::python
