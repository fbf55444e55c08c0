// vgpu/backend/registry.hpp — factory functions the explicit registry calls.
// Backend-author interface. Each backend defines its factory; core/src/registry.cpp lists them
// in order (CUDA, Vulkan, OpenGL, CPU last) under #if VGPU_WITH_*.
#pragma once

#include <memory>

#include "vgpu/backend.hpp"

namespace vgpu {

/// Creates the CUDA backend (VGPU_WITH_CUDA).
std::unique_ptr<ComputeBackend> make_cuda_backend();
/// Creates the Vulkan backend (VGPU_WITH_VULKAN).
std::unique_ptr<ComputeBackend> make_vulkan_backend();
/// Creates the OpenGL backend (VGPU_WITH_OPENGL).
std::unique_ptr<ComputeBackend> make_opengl_backend();
/// Creates the CPU fallback backend (always built).
std::unique_ptr<ComputeBackend> make_cpu_backend();

}  // namespace vgpu
