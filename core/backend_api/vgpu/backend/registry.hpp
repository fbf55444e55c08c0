// vgpu/backend/registry.hpp — factory functions the explicit registry calls.
// Backend-author interface. Each backend defines its factory; core/src/registry.cpp lists them
// in order (CUDA, Vulkan, OpenGL, CPU last) under #if VGPU_WITH_*.
#pragma once

#include <memory>

#include "vgpu/backend.hpp"

namespace vgpu {

/// Creates the CPU fallback backend (always built).
std::unique_ptr<ComputeBackend> make_cpu_backend();

}  // namespace vgpu
