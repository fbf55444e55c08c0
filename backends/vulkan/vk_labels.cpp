// SPDX-License-Identifier: Apache-2.0
// backends/vulkan/vk_labels.cpp — debug names of vgpu's Vulkan objects (VK_EXT_debug_utils), which
// capture tools (RenderDoc, Nsight) and the validation layer's messages show.
#include "vk_device.hpp"

namespace vgpu::vulkan {

void VulkanDevice::name_object(VkObjectType type, std::uint64_t handle, const std::string& name) const noexcept {
  const InstanceFns& f = instance_->fns();
  if (!f.vkSetDebugUtilsObjectNameEXT || handle == 0 || name.empty() || process_exiting()) return;
  VkDebugUtilsObjectNameInfoEXT info{VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT};
  info.objectType = type;
  info.objectHandle = handle;
  info.pObjectName = name.c_str();
  (void)f.vkSetDebugUtilsObjectNameEXT(device_, &info);  // a name is a courtesy: a failure changes nothing
}

void VulkanDevice::set_label(BufferImpl& buffer, const std::string& label) noexcept {
  const Allocation& a = static_cast<VkBufferImpl&>(buffer).alloc;
  name_object(VK_OBJECT_TYPE_BUFFER, reinterpret_cast<std::uint64_t>(a.buffer), label);
  name_object(VK_OBJECT_TYPE_DEVICE_MEMORY, reinterpret_cast<std::uint64_t>(a.memory), label);
}

}  // namespace vgpu::vulkan
