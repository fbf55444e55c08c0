// python/src/module.cpp — the _vgpu extension module: vgpu's C++ API for Python and numpy.
#include <string>

#include "bindings.hpp"
#include "vgpu/version.hpp"

PYBIND11_MODULE(_vgpu, m) {
  m.doc() = "vgpu: compute kernels on CUDA, Vulkan, OpenGL or the CPU, compiled once and dispatched many times.";
  m.attr("__version__") = std::to_string(vgpu::kVersionMajor) + "." + std::to_string(vgpu::kVersionMinor) + "." +
                          std::to_string(vgpu::kVersionPatch);
  vgpu::python::bind_errors(m);
  vgpu::python::bind_devices(m);
  vgpu::python::bind_cache(m);
  vgpu::python::bind_kernels(m);
  vgpu::python::bind_queue(m);
}
