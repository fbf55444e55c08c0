// SPDX-License-Identifier: Apache-2.0
// backends/vulkan/vk_instance.cpp — instance creation, device discovery and DeviceInfo.
#include "vk_instance.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "vgpu/backend/driver_limits.hpp"
#include "vgpu/backend/fingerprint.hpp"
#include "vgpu/kernel_source.hpp"
#include "vgpu/log.hpp"
#include "vgpu/version.hpp"
#include "vk_validation.hpp"

namespace vgpu::vulkan {
namespace {

constexpr const char* kPortabilityEnumeration = "VK_KHR_portability_enumeration";

std::string version_string(std::uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

// Vendors pack driverVersion their own way; NVIDIA uses 10.8.8.6 bits.
std::string driver_string(const VkPhysicalDeviceProperties& p) {
  const std::uint32_t v = p.driverVersion;
  if (p.vendorID == 0x10DE)
    return std::to_string(v >> 22) + "." + std::to_string((v >> 14) & 0xff) + "." + std::to_string((v >> 6) & 0xff);
  return version_string(v);
}

/// Returns the device's SMs / compute units where a vendor extension tells (core Vulkan does
/// not): VK_NV_shader_sm_builtins' shaderSMCount, or VK_AMD_shader_core_properties' engines ×
/// arrays × CUs per array; 0 (unknown) elsewhere. The matmul tilings size their grids by it.
std::uint32_t vendor_compute_units(const InstanceFns& f, VkPhysicalDevice h) {
  std::uint32_t n = 0;
  f.vkEnumerateDeviceExtensionProperties(h, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  if (n) f.vkEnumerateDeviceExtensionProperties(h, nullptr, &n, exts.data());
  exts.resize(n);
  auto has = [&](const char* name) {
    return std::any_of(exts.begin(), exts.end(),
                       [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
  };
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  if (has(VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME)) {
    VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
    p2.pNext = &sm;
    f.vkGetPhysicalDeviceProperties2(h, &p2);
    return sm.shaderSMCount;
  }
  if (has(VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME)) {
    VkPhysicalDeviceShaderCorePropertiesAMD core{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD};
    p2.pNext = &core;
    f.vkGetPhysicalDeviceProperties2(h, &p2);
    return core.shaderEngineCount * core.shaderArraysPerEngineCount * core.computeUnitsPerShaderArray;
  }
  return 0;
}

std::string hex(const std::uint8_t* bytes, std::size_t n) {
  std::string s;
  char buf[3];
  for (std::size_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", bytes[i]);
    s += buf;
  }
  return s;
}

DeviceType device_type(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return DeviceType::discrete_gpu;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return DeviceType::integrated_gpu;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return DeviceType::virtual_gpu;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return DeviceType::software;  // lavapipe, SwiftShader
    default:
      return DeviceType::other;
  }
}

std::string vendor_name(std::uint32_t id) {
  switch (id) {
    case 0x10DE:
      return "NVIDIA";
    case 0x1002:
      return "AMD";
    case 0x8086:
      return "Intel";
    case 0x10005:
      return "Mesa";
    case 0x13B5:
      return "ARM";
    case 0x5143:
      return "Qualcomm";
    default: {
      char buf[16];
      std::snprintf(buf, sizeof buf, "0x%04x", id);
      return buf;
    }
  }
}

DeviceInfo describe(const PhysicalDevice& pd, std::uint32_t index, const std::string& driver_info) {
  const auto& p = pd.properties;
  DeviceInfo d;
  d.backend = BackendKind::vulkan;
  d.index = index;
  d.name = p.deviceName;
  d.vendor = vendor_name(p.vendorID);
  d.vendor_id = p.vendorID;
  d.device_id = p.deviceID;
  d.type = device_type(p.deviceType);
  d.driver_version = driver_string(p) + (driver_info.empty() ? "" : " (" + driver_info + ")");
  d.api_version = "Vulkan " + version_string(p.apiVersion);
  std::uint64_t device_local = 0;
  for (std::uint32_t h = 0; h < pd.memory.memoryHeapCount; ++h)
    if (pd.memory.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      device_local = std::max<std::uint64_t>(device_local, pd.memory.memoryHeaps[h].size);
  d.memory_bytes = device_local;
  const auto& l = p.limits;
  d.limits.max_workgroup_size = {l.maxComputeWorkGroupSize[0], l.maxComputeWorkGroupSize[1],
                                 l.maxComputeWorkGroupSize[2]};
  d.limits.max_workgroup_invocations = l.maxComputeWorkGroupInvocations;
  d.limits.max_workgroup_count = {l.maxComputeWorkGroupCount[0], l.maxComputeWorkGroupCount[1],
                                  l.maxComputeWorkGroupCount[2]};
  d.limits.max_shared_memory_bytes = l.maxComputeSharedMemorySize;
  // A storage-buffer binding cannot address more than maxStorageBufferRange bytes.
  d.limits.max_buffer_bytes = std::min<std::uint64_t>(l.maxStorageBufferRange, device_local ? device_local : ~0ull);
  d.limits.max_bindings = std::min<std::uint32_t>(l.maxPerStageDescriptorStorageBuffers, 32);
  if (l.maxPushConstantsSize >= 128) d.features.push_back("push_constants_128");
  for (std::string& f : pd.features.names()) d.features.push_back(std::move(f));
  d.dialects = {std::string(dialect::glsl), std::string(dialect::glsl_shader), std::string(dialect::spirv)};
  // The name identifies nothing the ids do not, but lets `vgpu-probe cache list` say which device
  // an entry is for (as the other backends' names and renderer strings do).
  d.fingerprint = make_fingerprint({{"backend", "vulkan"},
                                    {"name", d.name},
                                    {"vendor_id", std::to_string(p.vendorID)},
                                    {"device_id", std::to_string(p.deviceID)},
                                    {"driver_version", std::to_string(p.driverVersion)},
                                    {"pipeline_cache_uuid", hex(p.pipelineCacheUUID, VK_UUID_SIZE)},
                                    {"api_version", version_string(p.apiVersion)}});
  return d;
}

}  // namespace

std::shared_ptr<Instance> Instance::create(std::string* reason) {
  std::shared_ptr<Instance> inst(new Instance());
  InstanceFns& f = inst->fns_;
  if (!load_global(f, reason)) return nullptr;
  std::uint32_t loader_version = VK_API_VERSION_1_0;
  f.vkEnumerateInstanceVersion(&loader_version);
  if (loader_version < VK_API_VERSION_1_1) {
    *reason = "the Vulkan loader supports only API " + version_string(loader_version) + "; vgpu needs 1.1";
    return nullptr;
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "vgpu";
  app.pEngineName = "vgpu";
  app.engineVersion = VK_MAKE_API_VERSION(0, kVersionMajor, kVersionMinor, kVersionPatch);
  // The highest API vgpu uses (a device's own is the lesser of this and its apiVersion): 1.2+
  // carries the shader features of VkPhysicalDeviceVulkan11/12Features without extensions.
  app.apiVersion = std::min<std::uint32_t>(loader_version, VK_API_VERSION_1_3);
  const ValidationSetup validation = validation_setup(f);
  std::vector<const char*> extensions = validation.extensions;
  // Debug names and labels for kernels, buffers and dispatches, whether or not vgpu validates:
  // a capture tool (RenderDoc, Nsight) shows them. The loader itself offers the extension.
  const bool debug_utils = validation.messenger || instance_has_extension(f, VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  if (debug_utils && !validation.messenger) extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  // A loader from 1.3.216 on hides portability drivers (MoltenVK on macOS) unless the instance
  // asks for them; asked for only where the loader offers the extension.
  if (instance_has_extension(f, kPortabilityEnumeration)) {
    extensions.push_back(kPortabilityEnumeration);
    ci.flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    inst->portability_enumeration_ = true;
    log(LogLevel::debug,
        "Vulkan: the loader offers VK_KHR_portability_enumeration; portability drivers are listed too");
  }
  ci.pApplicationInfo = &app;
  ci.enabledLayerCount = static_cast<std::uint32_t>(validation.layers.size());
  ci.ppEnabledLayerNames = validation.layers.data();
  ci.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
  ci.ppEnabledExtensionNames = extensions.data();
  // Chained too, so that instance creation and destruction are validated as well.
  if (validation.messenger) ci.pNext = &validation.messenger_info;
  const VkResult r = f.vkCreateInstance(&ci, nullptr, &inst->instance_);
  watch_process_exit();
  if (r != VK_SUCCESS) {
    *reason = std::string("vkCreateInstance failed with ") + result_name(r);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
      *reason +=
          ": no Vulkan driver (ICD) could be loaded. Install one (mesa-vulkan-drivers, or the GPU vendor's driver). "
          "On NVIDIA the ICD lives in libGLX_nvidia.so.0, which needs glvnd's libGLdispatch.so.0 on the library path; "
          "VK_LOADER_DEBUG=error makes the loader say which ICD failed and why";
    inst->instance_ = VK_NULL_HANDLE;
    return nullptr;
  }
  if (!load_instance(f, inst->instance_, reason)) return nullptr;
  inst->messenger_ = create_messenger(f, inst->instance_, validation);
  if (debug_utils) {
    f.vkSetDebugUtilsObjectNameEXT = reinterpret_cast<PFN_vkSetDebugUtilsObjectNameEXT>(
        f.vkGetInstanceProcAddr(inst->instance_, "vkSetDebugUtilsObjectNameEXT"));
    f.vkCmdBeginDebugUtilsLabelEXT = reinterpret_cast<PFN_vkCmdBeginDebugUtilsLabelEXT>(
        f.vkGetInstanceProcAddr(inst->instance_, "vkCmdBeginDebugUtilsLabelEXT"));
    f.vkCmdEndDebugUtilsLabelEXT = reinterpret_cast<PFN_vkCmdEndDebugUtilsLabelEXT>(
        f.vkGetInstanceProcAddr(inst->instance_, "vkCmdEndDebugUtilsLabelEXT"));
    if (!f.vkCmdBeginDebugUtilsLabelEXT || !f.vkCmdEndDebugUtilsLabelEXT) {  // labels come in pairs or not at all
      f.vkCmdBeginDebugUtilsLabelEXT = nullptr;
      f.vkCmdEndDebugUtilsLabelEXT = nullptr;
    }
  }

  std::uint32_t count = 0;
  f.vkEnumeratePhysicalDevices(inst->instance_, &count, nullptr);
  std::vector<VkPhysicalDevice> handles(count);
  if (count) f.vkEnumeratePhysicalDevices(inst->instance_, &count, handles.data());
  for (VkPhysicalDevice h : handles) {
    PhysicalDevice pd;
    pd.handle = h;
    f.vkGetPhysicalDeviceProperties(h, &pd.properties);
    if (pd.properties.apiVersion < VK_API_VERSION_1_1) continue;
    f.vkGetPhysicalDeviceMemoryProperties(h, &pd.memory);
    pd.features = query_features(f, h, std::min(app.apiVersion, pd.properties.apiVersion));
    std::uint32_t qcount = 0;
    f.vkGetPhysicalDeviceQueueFamilyProperties(h, &qcount, nullptr);
    std::vector<VkQueueFamilyProperties> families(qcount);
    f.vkGetPhysicalDeviceQueueFamilyProperties(h, &qcount, families.data());
    // Prefer a compute-only family (async compute on discrete GPUs), else any with compute.
    int chosen = -1;
    for (std::uint32_t q = 0; q < qcount; ++q)
      if ((families[q].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(families[q].queueFlags & VK_QUEUE_GRAPHICS_BIT)) {
        chosen = static_cast<int>(q);
        break;
      }
    for (std::uint32_t q = 0; chosen < 0 && q < qcount; ++q)
      if (families[q].queueFlags & VK_QUEUE_COMPUTE_BIT) chosen = static_cast<int>(q);
    if (chosen < 0) continue;
    pd.queue_family = static_cast<std::uint32_t>(chosen);
    pd.timestamp_bits = families[static_cast<std::size_t>(chosen)].timestampValidBits;
    // ID and subgroup properties are core in 1.1 (every device here); driver properties in 1.2.
    VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceIDProperties ids{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    p2.pNext = &ids;
    ids.pNext = &subgroup;
    std::string driver_info;
    if (pd.features.api_version >= VK_API_VERSION_1_2) subgroup.pNext = &driver;
    f.vkGetPhysicalDeviceProperties2(h, &p2);
    if (pd.features.api_version >= VK_API_VERSION_1_2)
      driver_info = std::string(driver.driverName) + " " + driver.driverInfo;
    pd.info = describe(pd, static_cast<std::uint32_t>(inst->devices_.size()), driver_info);
    pd.info.device_uuid = hex(ids.deviceUUID, VK_UUID_SIZE);
    pd.info.driver_uuid = hex(ids.driverUUID, VK_UUID_SIZE);
    if (subgroup.subgroupSize > 0) pd.info.subgroup_size = subgroup.subgroupSize;
    pd.info.compute_units = vendor_compute_units(f, h);
    // lavapipe runs shaders through Mesa's gallivm, which cuts every loop short past its limit.
    const bool lavapipe =
        pd.features.api_version >= VK_API_VERSION_1_2 && driver.driverID == VK_DRIVER_ID_MESA_LLVMPIPE;
    pd.info.limits.max_loop_iterations = lavapipe ? kGallivmLoopIterations : loop_iteration_limit_of(pd.info.name);
    inst->devices_.push_back(pd);
  }
  if (inst->devices_.empty()) {
    *reason = count == 0 ? "the Vulkan loader found no physical device"
                         : "no Vulkan 1.1 device with a compute queue was found";
    return nullptr;
  }
  return inst;
}

Instance::~Instance() {
  if (process_exiting()) return;  // the driver may be gone already
  if (messenger_ != VK_NULL_HANDLE) fns_.vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  if (instance_ != VK_NULL_HANDLE && fns_.vkDestroyInstance) fns_.vkDestroyInstance(instance_, nullptr);
}

}  // namespace vgpu::vulkan
