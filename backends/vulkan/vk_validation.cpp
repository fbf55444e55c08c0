// SPDX-License-Identifier: Apache-2.0
// backends/vulkan/vk_validation.cpp — the validation layer and its messenger.
#include "vk_validation.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "vgpu/config.hpp"
#include "vgpu/log.hpp"

namespace vgpu::vulkan {
namespace {

constexpr const char* kLayer = "VK_LAYER_KHRONOS_validation";

// What a shader prints with debugPrintfEXT (the layer's debug printf, VK_LAYER_ENABLES=
// VK_VALIDATION_FEATURE_ENABLE_DEBUG_PRINTF_EXT) comes as an information message with this id.
constexpr const char* kShaderPrintf = "UNASSIGNED-DEBUG-PRINTF";

// Every finding is an error line, so that a test (or a user) sees it whatever the threshold;
// the tests fail on any line that starts with "Vulkan validation:". A shader's own printf output
// is no finding: it is logged at info as "Vulkan shader printf: ...", and other information
// messages (the layer's status) are dropped. The objects' debug names (kernels, buffers) and
// the command buffer's labels (the dispatch's kernel) go at the end, so a message says which of
// vgpu's objects it is about.
VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  try {
    const bool printf = data && data->pMessageIdName && std::strcmp(data->pMessageIdName, kShaderPrintf) == 0;
    if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT && !printf) return VK_FALSE;
    std::string text = std::string(printf ? "Vulkan shader printf: " : "Vulkan validation: ") +
                       (data && data->pMessage ? data->pMessage : "(no text)");
    std::string names, labels;
    for (std::uint32_t i = 0; data && i < data->objectCount; ++i)
      if (const char* n = data->pObjects[i].pObjectName; n && *n) names += (names.empty() ? "" : ", ") + std::string(n);
    for (std::uint32_t i = 0; data && i < data->cmdBufLabelCount; ++i)
      if (const char* n = data->pCmdBufLabels[i].pLabelName; n && *n)
        labels += (labels.empty() ? "" : ", ") + std::string(n);
    if (!names.empty()) text += " [objects: " + names + "]";
    if (!labels.empty()) text += " [labels: " + labels + "]";
    log(printf ? LogLevel::info : LogLevel::error, text);
  } catch (...) {  // no memory for the text: nothing can be said, and nothing may escape into the driver
  }
  return VK_FALSE;  // the call goes on as the application made it
}

}  // namespace

bool instance_has_extension(const InstanceFns& fns, const char* name, const char* layer) {
  std::uint32_t n = 0;
  if (fns.vkEnumerateInstanceExtensionProperties(layer, &n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> props(n);
  if (n && fns.vkEnumerateInstanceExtensionProperties(layer, &n, props.data()) != VK_SUCCESS) return false;
  props.resize(n);
  return std::any_of(props.begin(), props.end(),
                     [&](const VkExtensionProperties& p) { return std::strcmp(p.extensionName, name) == 0; });
}

ValidationSetup validation_setup(const InstanceFns& fns) {
  ValidationSetup s;
  if (!config().vulkan_validation) return s;
  std::uint32_t n = 0;
  fns.vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  if (n) fns.vkEnumerateInstanceLayerProperties(&n, layers.data());
  layers.resize(n);
  const bool have_layer = std::any_of(layers.begin(), layers.end(),
                                      [](const VkLayerProperties& l) { return std::strcmp(l.layerName, kLayer) == 0; });
  if (!have_layer) {
    log(LogLevel::warn,
        "VGPU_VULKAN_VALIDATION=1, but the Vulkan validation layer VK_LAYER_KHRONOS_validation is not installed: "
        "Vulkan runs without it. Fix: install it (Debian: vulkan-validationlayers), or unset VGPU_VULKAN_VALIDATION.");
    return s;
  }
  s.layers.push_back(kLayer);
  if (!instance_has_extension(fns, VK_EXT_DEBUG_UTILS_EXTENSION_NAME, nullptr) &&
      !instance_has_extension(fns, VK_EXT_DEBUG_UTILS_EXTENSION_NAME, kLayer)) {
    log(LogLevel::warn,
        "VGPU_VULKAN_VALIDATION=1, but VK_EXT_debug_utils is missing: the validation layer reports on its own, "
        "not through vgpu's log. Fix: update the Vulkan loader and validation layer.");
    return s;
  }
  s.extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  s.messenger = true;
  s.messenger_info.messageSeverity =
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;  // information: for shader printf only (on_message)
  // General messages are the loader's (which ICDs it found), not findings about vgpu's calls.
  s.messenger_info.messageType =
      VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  s.messenger_info.pfnUserCallback = on_message;
  return s;
}

VkDebugUtilsMessengerEXT create_messenger(InstanceFns& fns, VkInstance instance, const ValidationSetup& setup) {
  if (!setup.messenger) return VK_NULL_HANDLE;
  fns.vkCreateDebugUtilsMessengerEXT = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
      fns.vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
  fns.vkDestroyDebugUtilsMessengerEXT = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
      fns.vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
  VkDebugUtilsMessengerEXT m = VK_NULL_HANDLE;
  if (!fns.vkCreateDebugUtilsMessengerEXT ||
      fns.vkCreateDebugUtilsMessengerEXT(instance, &setup.messenger_info, nullptr, &m) != VK_SUCCESS) {
    log(LogLevel::warn,
        "VGPU_VULKAN_VALIDATION=1, but the validation messenger could not be created: messages go "
        "to the layer's own output. Fix: update the Vulkan validation layer.");
    return VK_NULL_HANDLE;
  }
  return m;
}

}  // namespace vgpu::vulkan
