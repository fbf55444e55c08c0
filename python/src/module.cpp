// SPDX-License-Identifier: Apache-2.0
// python/src/module.cpp — the _vgpu extension module: vgpu's C++ API for Python and numpy.
#include "bindings.hpp"
#include "vgpu/inventory.hpp"

PYBIND11_MODULE(_vgpu, m) {
  m.doc() = "vgpu: compute kernels on CUDA, Vulkan, OpenGL or the CPU, compiled once and dispatched many times.";
  m.attr("__version__") = vgpu::version_string();
  vgpu::python::bind_errors(m);
  vgpu::python::bind_log(m);
  vgpu::python::bind_devices(m);
  vgpu::python::bind_arrays(m);
  vgpu::python::bind_cache(m);
  vgpu::python::bind_kernels(m);
  vgpu::python::bind_queue(m);
}
