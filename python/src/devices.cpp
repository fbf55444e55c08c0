// python/src/devices.cpp — placeholder until this part of the Python surface is written.
#include "bindings.hpp"

namespace vgpu::python {

void bind_devices(pybind11::module_&) {}

}  // namespace vgpu::python
