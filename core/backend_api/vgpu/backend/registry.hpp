// vgpu/backend/registry.hpp — factory functions the explicit registry calls.
// Backend-author interface. Each backend defines its factory; core/src/registry.cpp lists them
// in order (CUDA, Vulkan, OpenGL, CPU last) under #if VGPU_WITH_*. A Runtime makes its own
// backends, with its settings (null: BackendSettings::process()); the backend hands them to
// every device it opens.
#pragma once

#include <memory>

#include "vgpu/backend.hpp"
#include "vgpu/backend/backend_settings.hpp"

namespace vgpu {

/// Creates the CUDA backend (VGPU_WITH_CUDA).
std::unique_ptr<ComputeBackend> make_cuda_backend(std::shared_ptr<const BackendSettings> settings = nullptr);
/// Creates the Vulkan backend (VGPU_WITH_VULKAN).
std::unique_ptr<ComputeBackend> make_vulkan_backend(std::shared_ptr<const BackendSettings> settings = nullptr);
/// Creates the OpenGL backend (VGPU_WITH_OPENGL).
std::unique_ptr<ComputeBackend> make_opengl_backend(std::shared_ptr<const BackendSettings> settings = nullptr);
/// Creates the CPU fallback backend (always built); throws invalid_argument when settings name
/// an unknown instruction set in code (BackendSettings::cpu_isa_from_code).
std::unique_ptr<ComputeBackend> make_cpu_backend(std::shared_ptr<const BackendSettings> settings = nullptr);

}  // namespace vgpu
