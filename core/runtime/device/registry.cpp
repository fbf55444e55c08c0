// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/registry.cpp — the one place that lists backends: ordered, CPU last, no static
// self-registration (so link order can never change which backends exist). Adding a backend
// is one entry in kRegistry (and its factory's #if below); nothing else in core changes.
#include "registry.hpp"

#include "vgpu/backend/registry.hpp"

namespace vgpu {
// Each backend's factory, defined in its own folder when its CMake option is ON (the CPU one,
// which tests also call, is declared in vgpu/backend/registry.hpp).
std::unique_ptr<ComputeBackend> make_cuda_backend(std::shared_ptr<const BackendSettings> settings);
std::unique_ptr<ComputeBackend> make_vulkan_backend(std::shared_ptr<const BackendSettings> settings);
std::unique_ptr<ComputeBackend> make_opengl_backend(std::shared_ptr<const BackendSettings> settings);
}  // namespace vgpu

namespace vgpu::detail {
namespace {

using Factory = std::unique_ptr<ComputeBackend> (*)(std::shared_ptr<const BackendSettings>);

// A backend built out of this library has no factory (nullptr), only its name and option.
#if VGPU_WITH_CUDA
constexpr Factory kCuda = make_cuda_backend;
#else
constexpr Factory kCuda = nullptr;
#endif
#if VGPU_WITH_VULKAN
constexpr Factory kVulkan = make_vulkan_backend;
#else
constexpr Factory kVulkan = nullptr;
#endif
#if VGPU_WITH_OPENGL
constexpr Factory kOpengl = make_opengl_backend;
#else
constexpr Factory kOpengl = nullptr;
#endif

// A backend's kind is the one its name makes (BackendKind::named).
struct Entry {
  const char* name;    // as in VGPU_BACKEND and device ids
  const char* option;  // the CMake option that builds it
  Factory make;        // null when built without it
};

// Preference order: selection measures, but this order breaks ties and orders listings.
const Entry kRegistry[] = {
    {"cuda", "VGPU_WITH_CUDA", kCuda},
    {"vulkan", "VGPU_WITH_VULKAN", kVulkan},
    {"opengl", "VGPU_WITH_OPENGL", kOpengl},
    {"cpu", "(always built)", make_cpu_backend},
};

}  // namespace

std::vector<BackendKind> known_backends() {
  std::vector<BackendKind> kinds;
  for (const Entry& e : kRegistry) kinds.push_back(BackendKind::named(e.name));
  return kinds;
}

std::vector<std::unique_ptr<ComputeBackend>> make_compiled_backends(
    const std::shared_ptr<const BackendSettings>& settings) {
  std::vector<std::unique_ptr<ComputeBackend>> backends;
  for (const Entry& e : kRegistry)
    if (e.make) backends.push_back(e.make(settings));
  return backends;
}

const char* build_option(BackendKind kind) {
  for (const Entry& e : kRegistry)
    if (e.name == to_string(kind)) return e.option;
  return "(not in this build's registry)";
}

}  // namespace vgpu::detail
