// SPDX-License-Identifier: Apache-2.0
// backends/vulkan/vk_loader.hpp — libvulkan.so.1 loaded at run time, and the function tables
// vgpu uses. Nothing links against the loader, so a machine without Vulkan runs the rest.
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <string>

namespace vgpu::vulkan {

#define VGPU_VK_GLOBAL_FNS(X)           \
  X(vkCreateInstance)                   \
  X(vkEnumerateInstanceVersion)         \
  X(vkEnumerateInstanceLayerProperties) \
  X(vkEnumerateInstanceExtensionProperties)

#define VGPU_VK_INSTANCE_FNS(X)               \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceFeatures2)             \
  X(vkEnumerateDeviceExtensionProperties)     \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkCreateDevice)                           \
  X(vkGetDeviceProcAddr)

#define VGPU_VK_DEVICE_FNS(X)      \
  X(vkDestroyDevice)               \
  X(vkGetDeviceQueue)              \
  X(vkCreateBuffer)                \
  X(vkDestroyBuffer)               \
  X(vkGetBufferMemoryRequirements) \
  X(vkAllocateMemory)              \
  X(vkFreeMemory)                  \
  X(vkBindBufferMemory)            \
  X(vkMapMemory)                   \
  X(vkUnmapMemory)                 \
  X(vkCreateCommandPool)           \
  X(vkDestroyCommandPool)          \
  X(vkAllocateCommandBuffers)      \
  X(vkBeginCommandBuffer)          \
  X(vkEndCommandBuffer)            \
  X(vkResetCommandBuffer)          \
  X(vkCmdBindPipeline)             \
  X(vkCmdBindDescriptorSets)       \
  X(vkCmdPushConstants)            \
  X(vkCmdDispatch)                 \
  X(vkCmdPipelineBarrier)          \
  X(vkCmdCopyBuffer)               \
  X(vkCmdFillBuffer)               \
  X(vkQueueSubmit)                 \
  X(vkCreateFence)                 \
  X(vkDestroyFence)                \
  X(vkWaitForFences)               \
  X(vkGetFenceStatus)              \
  X(vkResetFences)                 \
  X(vkCreateShaderModule)          \
  X(vkDestroyShaderModule)         \
  X(vkCreateDescriptorSetLayout)   \
  X(vkDestroyDescriptorSetLayout)  \
  X(vkCreatePipelineLayout)        \
  X(vkDestroyPipelineLayout)       \
  X(vkCreateComputePipelines)      \
  X(vkDestroyPipeline)             \
  X(vkCreatePipelineCache)         \
  X(vkDestroyPipelineCache)        \
  X(vkGetPipelineCacheData)        \
  X(vkCreateDescriptorPool)        \
  X(vkDestroyDescriptorPool)       \
  X(vkAllocateDescriptorSets)      \
  X(vkFreeDescriptorSets)          \
  X(vkUpdateDescriptorSets)        \
  X(vkCreateQueryPool)             \
  X(vkDestroyQueryPool)            \
  X(vkCmdResetQueryPool)           \
  X(vkCmdWriteTimestamp)           \
  X(vkGetQueryPoolResults)

#define VGPU_VK_DECLARE(name) PFN_##name name = nullptr;

/// Loader entry points plus instance-level functions. Loaded once per process.
struct InstanceFns {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  VGPU_VK_GLOBAL_FNS(VGPU_VK_DECLARE)
  VGPU_VK_INSTANCE_FNS(VGPU_VK_DECLARE)
  // VK_EXT_debug_utils, present only when validation (VGPU_VULKAN_VALIDATION) enabled it.
  PFN_vkCreateDebugUtilsMessengerEXT vkCreateDebugUtilsMessengerEXT = nullptr;
  PFN_vkDestroyDebugUtilsMessengerEXT vkDestroyDebugUtilsMessengerEXT = nullptr;
  // VK_EXT_debug_utils' names and labels, wherever the loader offers the extension (the loader
  // implements it; tools such as RenderDoc and Nsight show them): null where it is missing.
  PFN_vkSetDebugUtilsObjectNameEXT vkSetDebugUtilsObjectNameEXT = nullptr;
  PFN_vkCmdBeginDebugUtilsLabelEXT vkCmdBeginDebugUtilsLabelEXT = nullptr;
  PFN_vkCmdEndDebugUtilsLabelEXT vkCmdEndDebugUtilsLabelEXT = nullptr;
  // VK_NV_cooperative_matrix's shape list; null where no driver of the instance offers it.
  PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV vkGetPhysicalDeviceCooperativeMatrixPropertiesNV = nullptr;
};

/// Device-level functions, resolved through vkGetDeviceProcAddr for one VkDevice.
struct DeviceFns {
  VGPU_VK_DEVICE_FNS(VGPU_VK_DECLARE)
};

/// Opens libvulkan.so.1 (once) and returns vkGetInstanceProcAddr, or null with why in *error.
PFN_vkGetInstanceProcAddr load_loader(std::string* error);
/// Resolves the global functions; returns false (and why) when one is missing.
bool load_global(InstanceFns& fns, std::string* error);
/// Resolves the instance functions for instance; returns false (and why) when one is missing.
bool load_instance(InstanceFns& fns, VkInstance instance, std::string* error);
/// Resolves the device functions for device; throws unavailable when one is missing.
void load_device(const InstanceFns& ifns, VkDevice device, DeviceFns& fns);

/// Registers (once) an exit handler that runs before the driver's own teardown; call it right
/// after the driver is loaded (vkCreateInstance).
void watch_process_exit();
/// Returns true once the process is exiting: Vulkan objects are then left to the OS, since
/// the driver may already have torn itself down (static Runtime objects die after that).
bool process_exiting() noexcept;

/// Returns the VkResult's enumerator name, e.g. "VK_ERROR_OUT_OF_DEVICE_MEMORY".
const char* result_name(VkResult result);
/// Throws the vgpu error matching a failed VkResult (out_of_memory, device_lost, ...).
[[noreturn]] void fail_vk(VkResult result, const std::string& call);
/// Throws via fail_vk unless result is VK_SUCCESS.
inline void check_vk(VkResult result, const char* call) {
  if (result != VK_SUCCESS) fail_vk(result, call);
}

}  // namespace vgpu::vulkan
