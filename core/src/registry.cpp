// core/src/registry.cpp — the one place that lists backends: ordered, CPU last, no static
// self-registration (so link order can never change which backends exist).
#include "registry.hpp"

#include "vgpu/backend/registry.hpp"

namespace vgpu::detail {

std::vector<BackendKind> known_backends() {
  return {BackendKind::cuda, BackendKind::vulkan, BackendKind::opengl, BackendKind::cpu};
}

std::vector<std::unique_ptr<ComputeBackend>> make_compiled_backends(
    const std::shared_ptr<const BackendSettings>& settings) {
  std::vector<std::unique_ptr<ComputeBackend>> backends;
#if VGPU_WITH_CUDA
  backends.push_back(make_cuda_backend(settings));
#endif
#if VGPU_WITH_VULKAN
  backends.push_back(make_vulkan_backend(settings));
#endif
#if VGPU_WITH_OPENGL
  backends.push_back(make_opengl_backend(settings));
#endif
  backends.push_back(make_cpu_backend(settings));
  return backends;
}

const char* build_option(BackendKind kind) {
  switch (kind) {
    case BackendKind::cuda: return "VGPU_WITH_CUDA";
    case BackendKind::vulkan: return "VGPU_WITH_VULKAN";
    case BackendKind::opengl: return "VGPU_WITH_OPENGL";
    default: return "(always built)";
  }
}

}  // namespace vgpu::detail
