// SPDX-License-Identifier: Apache-2.0
// backends/vulkan/vk_loader.cpp — loading the Vulkan loader (the platform layer's names per OS)
// and function-table resolution.
#include "vk_loader.hpp"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "vgpu/error.hpp"
#include "vgpu/platform/dynamic_library.hpp"

namespace vgpu::vulkan {

PFN_vkGetInstanceProcAddr load_loader(std::string* error) {
  static std::once_flag once;
  static PFN_vkGetInstanceProcAddr gipa = nullptr;
  static std::string& why = *new std::string();  // leaked: a background probe may load first (exit_order.hpp)
  std::call_once(once, [] {
    // The library stays loaded for the process: drivers keep threads and callbacks in it.
    const std::vector<std::string> names = platform::runtime_library_names(platform::Runtime::vulkan_loader);
    std::string tried;
    for (const std::string& name : names) {
      std::string e;
      platform::DynamicLibrary lib = platform::DynamicLibrary::load(name, &e);
      if (!lib) {
        tried += (tried.empty() ? "" : "; ") + e;
        continue;
      }
      lib.keep_loaded();  // for the process: drivers keep threads and callbacks in it
      gipa = reinterpret_cast<PFN_vkGetInstanceProcAddr>(lib.symbol("vkGetInstanceProcAddr"));
      if (!gipa) why = name + " has no vkGetInstanceProcAddr; the loader is broken or too old";
      return;
    }
    why = "the Vulkan loader " + (names.empty() ? std::string("(none on this OS)") : names.front()) +
          " could not be loaded (" + tried +
          "); install the Vulkan loader (Debian: libvulkan1) and a driver such as "
          "mesa-vulkan-drivers";
  });
  if (!gipa && error) *error = why;
  return gipa;
}

bool load_global(InstanceFns& f, std::string* error) {
  f.vkGetInstanceProcAddr = load_loader(error);
  if (!f.vkGetInstanceProcAddr) return false;
#define VGPU_VK_LOAD_GLOBAL(name)                                                            \
  f.name = reinterpret_cast<PFN_##name>(f.vkGetInstanceProcAddr(VK_NULL_HANDLE, #name));     \
  if (!f.name) {                                                                             \
    if (error) *error = "the Vulkan loader lacks " #name " (Vulkan 1.1 or newer is needed)"; \
    return false;                                                                            \
  }
  VGPU_VK_GLOBAL_FNS(VGPU_VK_LOAD_GLOBAL)
#undef VGPU_VK_LOAD_GLOBAL
  return true;
}

bool load_instance(InstanceFns& f, VkInstance instance, std::string* error) {
#define VGPU_VK_LOAD_INSTANCE(name)                                                   \
  f.name = reinterpret_cast<PFN_##name>(f.vkGetInstanceProcAddr(instance, #name));    \
  if (!f.name) {                                                                      \
    if (error) *error = "the Vulkan instance lacks " #name " (Vulkan 1.1 is needed)"; \
    return false;                                                                     \
  }
  VGPU_VK_INSTANCE_FNS(VGPU_VK_LOAD_INSTANCE)
#undef VGPU_VK_LOAD_INSTANCE
  // Optional: only the devices whose driver offers VK_NV_cooperative_matrix use it.
  f.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV =
      reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
          f.vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
  return true;
}

void load_device(const InstanceFns& ifns, VkDevice device, DeviceFns& f) {
#define VGPU_VK_LOAD_DEVICE(name)                                                     \
  f.name = reinterpret_cast<PFN_##name>(ifns.vkGetDeviceProcAddr(device, #name));     \
  if (!f.name)                                                                        \
    fail(ErrorCategory::unavailable, "the Vulkan driver does not provide " #name ".", \
         "update the Vulkan driver, or use another backend (VGPU_BACKEND=opengl,cpu).");
  VGPU_VK_DEVICE_FNS(VGPU_VK_LOAD_DEVICE)
#undef VGPU_VK_LOAD_DEVICE
}

namespace {
std::atomic<bool> g_exiting{false};
}  // namespace

void watch_process_exit() {
  // atexit handlers run in reverse order of registration: registered after the driver loaded,
  // this one runs before the driver's, and before static objects made earlier are destroyed.
  static std::once_flag once;
  std::call_once(once, [] { std::atexit([] { g_exiting.store(true); }); });
}

bool process_exiting() noexcept { return g_exiting.load(); }

const char* result_name(VkResult r) {
  switch (r) {
#define VGPU_VK_CASE(x) \
  case x:               \
    return #x;
    VGPU_VK_CASE(VK_SUCCESS)
    VGPU_VK_CASE(VK_NOT_READY)
    VGPU_VK_CASE(VK_TIMEOUT)
    VGPU_VK_CASE(VK_INCOMPLETE)
    VGPU_VK_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    VGPU_VK_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    VGPU_VK_CASE(VK_ERROR_INITIALIZATION_FAILED)
    VGPU_VK_CASE(VK_ERROR_DEVICE_LOST)
    VGPU_VK_CASE(VK_ERROR_MEMORY_MAP_FAILED)
    VGPU_VK_CASE(VK_ERROR_LAYER_NOT_PRESENT)
    VGPU_VK_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    VGPU_VK_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
    VGPU_VK_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    VGPU_VK_CASE(VK_ERROR_TOO_MANY_OBJECTS)
    VGPU_VK_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    VGPU_VK_CASE(VK_ERROR_FRAGMENTED_POOL)
    VGPU_VK_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
    VGPU_VK_CASE(VK_ERROR_INVALID_SHADER_NV)
    VGPU_VK_CASE(VK_ERROR_UNKNOWN)
#undef VGPU_VK_CASE
    default:
      return "VK_ERROR_(unrecognised)";
  }
}

void fail_vk(VkResult r, const std::string& call) {
  const std::string what = call + " failed with " + result_name(r) + ".";
  switch (r) {
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_OUT_OF_POOL_MEMORY:
    case VK_ERROR_TOO_MANY_OBJECTS:
      fail(ErrorCategory::out_of_memory, what,
           "free device buffers or use smaller ones; vgpu-probe shows device memory.");
    case VK_ERROR_DEVICE_LOST:
      fail(ErrorCategory::device_lost, what,
           "the GPU reset or the driver crashed: vgpu recreates the device at its next call, but data in its "
           "buffers is gone (write it again); if it recurs, check the system log (dmesg) for GPU faults.");
    case VK_ERROR_INCOMPATIBLE_DRIVER:
    case VK_ERROR_INITIALIZATION_FAILED:
      fail(ErrorCategory::unavailable, what,
           "check the Vulkan driver installation (vulkaninfo), or use VGPU_BACKEND=opengl,cpu.");
    default:
      fail(ErrorCategory::internal, what, "report this with the output of vgpu-probe --json.");
  }
}

}  // namespace vgpu::vulkan
