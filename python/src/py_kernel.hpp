// SPDX-License-Identifier: Apache-2.0
// python/src/py_kernel.hpp — vgpu.PersistentKernel as the module holds it, so every part that
// hands out persistent kernels (PersistentKernel(...), KernelDatabase.get) returns that one type.
// The call rule is in kernels.cpp's header comment.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <vector>

#include "vgpu/persistent_kernel.hpp"

namespace vgpu::python {

struct CpuCallback;  // kernel_source.hpp: a cpu= Python callable's state

/// A vgpu.PersistentKernel: the C++ kernel, the Python callable it runs (cpu= kernels only) and
/// its argument layout. Thread-safety: as PersistentKernel (calls are serialised inside it).
struct PyKernel {
  std::shared_ptr<PersistentKernel> kernel;
  std::shared_ptr<CpuCallback> callback;
  std::vector<std::uint32_t> visible;  // plan tensor indices of the arguments, in order
  std::size_t read_count = 0;          // arguments the kernel reads (access read / read_write)

  PyKernel() = default;
  PyKernel(const PyKernel&) = delete;
  PyKernel& operator=(const PyKernel&) = delete;
  ~PyKernel() {
    // Closing the last handle of a device may wait for it: never with the GIL held.
    if (PyGILState_Check()) {
      pybind11::gil_scoped_release release;
      kernel.reset();
      callback.reset();
    }
  }
};

/// Returns a vgpu.PersistentKernel over kernel (e.g. one a KernelDatabase built); its arguments
/// are the plan's non-scratch tensors. Call with the GIL held.
pybind11::object wrap_kernel(std::shared_ptr<PersistentKernel> kernel);

}  // namespace vgpu::python
