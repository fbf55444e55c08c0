// SPDX-License-Identifier: Apache-2.0
// backends/vulkan/vk_features.hpp — the optional device features a user shader may need, which
// of them a device supports (and so gets enabled), and the check that a module's SPIR-V
// capabilities are covered by them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vk_loader.hpp"

namespace vgpu::vulkan {

/// The shader features vgpu enables on a VkDevice: every one the device supports, so that any
/// module whose capabilities they cover runs without recreating the device. A plain value;
/// immutable once queried (PhysicalDevice::features).
struct DeviceFeatures {
  std::uint32_t api_version = VK_API_VERSION_1_1;  // the device's API as the instance uses it
  // VkPhysicalDeviceFeatures
  bool shader_int16 = false, shader_int64 = false, shader_float64 = false;
  bool storage_buffer_array_dynamic_indexing = false, uniform_buffer_array_dynamic_indexing = false;
  // 16-bit storage and variable pointers (Vulkan 1.1 core)
  bool storage_buffer_16 = false, uniform_and_storage_buffer_16 = false, push_constant_16 = false;
  bool variable_pointers_storage_buffer = false, variable_pointers = false;
  // Vulkan 1.2 core, or the KHR extensions on a 1.1 device
  bool storage_buffer_8 = false, uniform_and_storage_buffer_8 = false, push_constant_8 = false;
  bool shader_float16 = false, shader_int8 = false;
  bool vulkan_memory_model = false, vulkan_memory_model_device_scope = false, vulkan_memory_model_chains = false;
  bool subgroup_extended_types = false;
  bool buffer_int64_atomics = false, shared_int64_atomics = false;
  // VK_NV_cooperative_matrix with the shape vgpu's matmul uses: 16×16×16 float16 products
  // accumulated in float32, subgroup scope (the feature "cooperative_matrix").
  bool cooperative_matrix = false;
  // VkPhysicalDeviceSubgroupProperties, counted only when the compute stage has them
  VkSubgroupFeatureFlags subgroup_operations = 0;
  // VK_EXT_external_memory_host's minImportedHostPointerAlignment: host memory can be imported
  // in place in whole units of it; 0 where the driver does not offer the extension.
  std::uint64_t host_import_alignment = 0;
  // Device extensions to enable: those the features above need on a 1.1 device (none on
  // 1.2+), and VK_EXT_external_memory_host where offered.
  std::vector<const char*> extensions;

  /// Returns the enabled features' names for DeviceInfo::features ("shader_float16", ...).
  std::vector<std::string> names() const;
};

/// Queries which of the features above the device supports at api_version (the lesser of the
/// instance's and the device's), with the extensions they need there.
DeviceFeatures query_features(const InstanceFns& fns, VkPhysicalDevice device, std::uint32_t api_version);

/// The pNext chain that enables features on vkCreateDevice. Not copyable (it points into
/// itself); create it where the VkDeviceCreateInfo lives.
class FeatureChain {
 public:
  /// Builds the chain for features (the subset to enable).
  explicit FeatureChain(const DeviceFeatures& features);
  FeatureChain(const FeatureChain&) = delete;
  FeatureChain& operator=(const FeatureChain&) = delete;
  /// Returns the head of the chain, a VkPhysicalDeviceFeatures2, for VkDeviceCreateInfo::pNext.
  const void* head() const noexcept { return &features2_; }

 private:
  friend DeviceFeatures query_features(const InstanceFns&, VkPhysicalDevice, std::uint32_t);
  FeatureChain(std::uint32_t api_version, const std::vector<const char*>& extensions);
  void link(std::uint32_t api_version, const std::vector<const char*>& extensions);
  void read(DeviceFeatures& f) const;
  VkPhysicalDeviceFeatures2 features2_{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDeviceVulkan11Features v11_{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features v12_{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  // A 1.1 device: the 1.1 core structs and the extensions' own.
  VkPhysicalDevice16BitStorageFeatures s16_{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceVariablePointersFeatures vp_{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VARIABLE_POINTERS_FEATURES};
  VkPhysicalDevice8BitStorageFeatures s8_{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  VkPhysicalDeviceShaderFloat16Int8Features f16_{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDeviceVulkanMemoryModelFeatures vmm_{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
  VkPhysicalDeviceShaderSubgroupExtendedTypesFeatures sub_{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SUBGROUP_EXTENDED_TYPES_FEATURES};
  VkPhysicalDeviceShaderAtomicInt64Features a64_{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES};
  // Any API version, where VK_NV_cooperative_matrix is offered.
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop_{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
};

/// Returns "" when a module declaring SPIR-V capability (its name, as reflection gives it) can
/// run with features enabled, else what it needs that is not ("the shaderFloat16 feature").
/// A capability vgpu does not know is never assumed to be supported.
std::string capability_problem(std::string_view capability, const DeviceFeatures& features);

}  // namespace vgpu::vulkan
