// core/src/registry.hpp — the explicit, ordered list of compiled-in backends.
#pragma once

#include <memory>
#include <vector>

#include "vgpu/backend.hpp"

namespace vgpu::detail {

/// Every backend kind vgpu knows, in registry (preference) order, CPU last.
std::vector<BackendKind> known_backends();
/// Creates the compiled-in backends in registry order (CPU last).
std::vector<std::unique_ptr<ComputeBackend>> make_compiled_backends();
/// Returns the CMake option that controls a backend, e.g. "VGPU_WITH_VULKAN".
const char* build_option(BackendKind kind);

}  // namespace vgpu::detail
