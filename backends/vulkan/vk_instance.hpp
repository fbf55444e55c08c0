// SPDX-License-Identifier: Apache-2.0
// backends/vulkan/vk_instance.hpp — the process's VkInstance and the devices it can use.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "vgpu/device_info.hpp"
#include "vk_features.hpp"
#include "vk_loader.hpp"

namespace vgpu::vulkan {

/// One usable physical device: a compute queue family and its vgpu description.
struct PhysicalDevice {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  std::uint32_t queue_family = 0;
  std::uint32_t timestamp_bits = 0;  // the queue family's timestampValidBits (0: no timestamps)
  VkPhysicalDeviceProperties properties{};
  VkPhysicalDeviceMemoryProperties memory{};
  DeviceFeatures features;  // the shader features (and extensions) its VkDevice is created with
  DeviceInfo info;
};

/// The VkInstance (API 1.1+, up to 1.3 where the loader has it; with the validation layer and
/// its messenger under VGPU_VULKAN_VALIDATION=1) and its compute-capable devices, created once and shared by the
/// backend and every device opened from it. Thread-safety: immutable after creation.
class Instance {
 public:
  /// Creates the instance; on failure returns null and sets *reason (the backend's status).
  static std::shared_ptr<Instance> create(std::string* reason);
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  /// Returns the loaded instance-level functions.
  const InstanceFns& fns() const noexcept { return fns_; }
  /// Returns the instance handle.
  VkInstance handle() const noexcept { return instance_; }
  /// Returns whether the instance enumerates portability drivers too
  /// (VK_KHR_portability_enumeration, asked for wherever the loader offers it).
  bool portability_enumeration() const noexcept { return portability_enumeration_; }
  /// Returns the devices with a compute queue, in the driver's order.
  const std::vector<PhysicalDevice>& devices() const noexcept { return devices_; }

 private:
  Instance() = default;
  InstanceFns fns_;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  bool portability_enumeration_ = false;
  std::vector<PhysicalDevice> devices_;
};

}  // namespace vgpu::vulkan
