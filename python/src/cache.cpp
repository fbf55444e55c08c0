// python/src/cache.cpp — placeholder until this part of the Python surface is written.
#include "bindings.hpp"

namespace vgpu::python {

void bind_cache(pybind11::module_&) {}

}  // namespace vgpu::python
