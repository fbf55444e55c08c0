// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/registry.hpp — the explicit, ordered list of compiled-in backends.
#pragma once

#include <memory>
#include <vector>

#include "vgpu/backend/compute_backend.hpp"
#include "vgpu/backend/backend_settings.hpp"

namespace vgpu::detail {

/// Every backend kind vgpu knows, in registry (preference) order, CPU last.
std::vector<BackendKind> known_backends();
/// Creates the compiled-in backends in registry order (CPU last), each with settings (one
/// runtime's); throws invalid_argument when a backend refuses them (an unknown CPU ISA in code).
std::vector<std::unique_ptr<ComputeBackend>> make_compiled_backends(
    const std::shared_ptr<const BackendSettings>& settings);
/// Returns the CMake option that controls a backend, e.g. "VGPU_WITH_VULKAN".
const char* build_option(BackendKind kind);

}  // namespace vgpu::detail
