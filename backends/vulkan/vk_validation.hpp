// SPDX-License-Identifier: Apache-2.0
// backends/vulkan/vk_validation.hpp — VGPU_VULKAN_VALIDATION: the Khronos validation layer and a
// VK_EXT_debug_utils messenger that logs each of its messages as a vgpu error.
#pragma once

#include <vector>

#include "vk_loader.hpp"

namespace vgpu::vulkan {

/// Returns whether the loader (layer null) or the named layer offers the instance extension name.
bool instance_has_extension(const InstanceFns& fns, const char* name, const char* layer = nullptr);

/// What the instance enables for validation: empty lists when VGPU_VULKAN_VALIDATION is off.
/// A plain value; messenger_info points at a static callback only.
struct ValidationSetup {
  std::vector<const char*> layers;      // VK_LAYER_KHRONOS_validation when installed
  std::vector<const char*> extensions;  // VK_EXT_debug_utils when available
  bool messenger = false;               // whether messenger_info is used
  VkDebugUtilsMessengerCreateInfoEXT messenger_info{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
};

/// Returns the layers and extensions to enable (per vgpu::config().vulkan_validation), logging
/// one line when the layer or VK_EXT_debug_utils is missing.
ValidationSetup validation_setup(const InstanceFns& fns);

/// Creates the messenger of setup on instance (resolving the debug-utils functions into fns);
/// returns VK_NULL_HANDLE when setup has none or creation fails (logged).
VkDebugUtilsMessengerEXT create_messenger(InstanceFns& fns, VkInstance instance, const ValidationSetup& setup);

}  // namespace vgpu::vulkan
