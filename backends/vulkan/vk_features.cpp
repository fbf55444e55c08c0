// SPDX-License-Identifier: Apache-2.0
// backends/vulkan/vk_features.cpp — device feature query, the chain that enables them, and the
// table from SPIR-V capabilities to the features they need.
#include "vk_features.hpp"

#include <algorithm>
#include <cstring>
#include <map>

namespace vgpu::vulkan {
namespace {

constexpr const char* kExt8Bit = "VK_KHR_8bit_storage";
constexpr const char* kExtFloat16Int8 = "VK_KHR_shader_float16_int8";
constexpr const char* kExtMemoryModel = "VK_KHR_vulkan_memory_model";
constexpr const char* kExtSubgroupTypes = "VK_KHR_shader_subgroup_extended_types";
constexpr const char* kExtAtomicInt64 = "VK_KHR_shader_atomic_int64";
constexpr const char* kExtPortabilitySubset = "VK_KHR_portability_subset";
constexpr const char* kExtHostMemory = "VK_EXT_external_memory_host";
constexpr const char* kExtCoopMatrixNV = "VK_NV_cooperative_matrix";

bool has(const std::vector<const char*>& list, const char* name) {
  return std::any_of(list.begin(), list.end(), [&](const char* e) { return std::strcmp(e, name) == 0; });
}

// True when the device's VK_NV_cooperative_matrix lists 16×16×16 float16·float16 + float32 →
// float32 at subgroup scope (the one shape core/kernels/glsl/matmul_coopmat.comp uses).
bool has_f16_matmul_shape(const InstanceFns& fns, VkPhysicalDevice device) {
  std::uint32_t n = 0;
  if (fns.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(device, &n, nullptr) != VK_SUCCESS || n == 0) return false;
  std::vector<VkCooperativeMatrixPropertiesNV> shapes(n, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
  if (fns.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(device, &n, shapes.data()) != VK_SUCCESS) return false;
  shapes.resize(n);
  return std::any_of(shapes.begin(), shapes.end(), [](const VkCooperativeMatrixPropertiesNV& s) {
    return s.MSize == 16 && s.NSize == 16 && s.KSize == 16 && s.AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
           s.BType == VK_COMPONENT_TYPE_FLOAT16_NV && s.CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
           s.DType == VK_COMPONENT_TYPE_FLOAT32_NV && s.scope == VK_SCOPE_SUBGROUP_NV;
  });
}

// Appends s to the chain that ends at *tail.
template <class T>
void append(void**& tail, T& s) {
  s.pNext = nullptr;
  *tail = &s;
  tail = &s.pNext;
}

}  // namespace

FeatureChain::FeatureChain(std::uint32_t api_version, const std::vector<const char*>& extensions) {
  link(api_version, extensions);
}

void FeatureChain::link(std::uint32_t api_version, const std::vector<const char*>& extensions) {
  void** tail = &features2_.pNext;
  if (has(extensions, kExtCoopMatrixNV)) append(tail, coop_);
  if (api_version >= VK_API_VERSION_1_2) {
    // On 1.2+ the per-version structs carry everything; the older ones must not be chained too.
    append(tail, v11_);
    append(tail, v12_);
    return;
  }
  append(tail, s16_);
  append(tail, vp_);
  if (has(extensions, kExt8Bit)) append(tail, s8_);
  if (has(extensions, kExtFloat16Int8)) append(tail, f16_);
  if (has(extensions, kExtMemoryModel)) append(tail, vmm_);
  if (has(extensions, kExtSubgroupTypes)) append(tail, sub_);
  if (has(extensions, kExtAtomicInt64)) append(tail, a64_);
}

// The one list of which struct member each feature is, for both directions (query and enable).
#define VGPU_VK_FEATURE_FIELDS(X, v12)                                                                                \
  X(shader_int16, features2_.features.shaderInt16)                                                                    \
  X(shader_int64, features2_.features.shaderInt64)                                                                    \
  X(shader_float64, features2_.features.shaderFloat64)                                                                \
  X(storage_buffer_array_dynamic_indexing, features2_.features.shaderStorageBufferArrayDynamicIndexing)               \
  X(uniform_buffer_array_dynamic_indexing, features2_.features.shaderUniformBufferArrayDynamicIndexing)               \
  X(storage_buffer_16, (v12 ? v11_.storageBuffer16BitAccess : s16_.storageBuffer16BitAccess))                         \
  X(uniform_and_storage_buffer_16,                                                                                    \
    (v12 ? v11_.uniformAndStorageBuffer16BitAccess : s16_.uniformAndStorageBuffer16BitAccess))                        \
  X(push_constant_16, (v12 ? v11_.storagePushConstant16 : s16_.storagePushConstant16))                                \
  X(variable_pointers_storage_buffer, (v12 ? v11_.variablePointersStorageBuffer : vp_.variablePointersStorageBuffer)) \
  X(variable_pointers, (v12 ? v11_.variablePointers : vp_.variablePointers))                                          \
  X(storage_buffer_8, (v12 ? v12_.storageBuffer8BitAccess : s8_.storageBuffer8BitAccess))                             \
  X(uniform_and_storage_buffer_8,                                                                                     \
    (v12 ? v12_.uniformAndStorageBuffer8BitAccess : s8_.uniformAndStorageBuffer8BitAccess))                           \
  X(push_constant_8, (v12 ? v12_.storagePushConstant8 : s8_.storagePushConstant8))                                    \
  X(shader_float16, (v12 ? v12_.shaderFloat16 : f16_.shaderFloat16))                                                  \
  X(shader_int8, (v12 ? v12_.shaderInt8 : f16_.shaderInt8))                                                           \
  X(vulkan_memory_model, (v12 ? v12_.vulkanMemoryModel : vmm_.vulkanMemoryModel))                                     \
  X(vulkan_memory_model_device_scope, (v12 ? v12_.vulkanMemoryModelDeviceScope : vmm_.vulkanMemoryModelDeviceScope))  \
  X(vulkan_memory_model_chains,                                                                                       \
    (v12 ? v12_.vulkanMemoryModelAvailabilityVisibilityChains : vmm_.vulkanMemoryModelAvailabilityVisibilityChains))  \
  X(subgroup_extended_types, (v12 ? v12_.shaderSubgroupExtendedTypes : sub_.shaderSubgroupExtendedTypes))             \
  X(buffer_int64_atomics, (v12 ? v12_.shaderBufferInt64Atomics : a64_.shaderBufferInt64Atomics))                      \
  X(shared_int64_atomics, (v12 ? v12_.shaderSharedInt64Atomics : a64_.shaderSharedInt64Atomics))                      \
  X(cooperative_matrix, coop_.cooperativeMatrix)

FeatureChain::FeatureChain(const DeviceFeatures& f) {
  link(f.api_version, f.extensions);
  const bool v12 = f.api_version >= VK_API_VERSION_1_2;
#define VGPU_VK_SET(name, member) member = f.name ? VK_TRUE : VK_FALSE;
  VGPU_VK_FEATURE_FIELDS(VGPU_VK_SET, v12)
#undef VGPU_VK_SET
}

void FeatureChain::read(DeviceFeatures& f) const {
  const bool v12 = f.api_version >= VK_API_VERSION_1_2;
  // A struct left out of the chain (its extension is absent) reads as all VK_FALSE.
#define VGPU_VK_GET(name, member) f.name = (member) == VK_TRUE;
  VGPU_VK_FEATURE_FIELDS(VGPU_VK_GET, v12)
#undef VGPU_VK_GET
}

#undef VGPU_VK_FEATURE_FIELDS

DeviceFeatures query_features(const InstanceFns& fns, VkPhysicalDevice device, std::uint32_t api_version) {
  DeviceFeatures f;
  f.api_version = api_version;
  std::uint32_t n = 0;
  fns.vkEnumerateDeviceExtensionProperties(device, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> props(n);
  if (n) fns.vkEnumerateDeviceExtensionProperties(device, nullptr, &n, props.data());
  props.resize(n);
  auto offered = [&](const char* e) {
    return std::any_of(props.begin(), props.end(),
                       [&](const VkExtensionProperties& p) { return std::strcmp(p.extensionName, e) == 0; });
  };
  std::vector<const char*> available;  // the feature extensions a 1.1 device needs (core from 1.2)
  if (api_version < VK_API_VERSION_1_2)
    for (const char* e : {kExt8Bit, kExtFloat16Int8, kExtMemoryModel, kExtSubgroupTypes, kExtAtomicInt64})
      if (offered(e)) available.push_back(e);
  if (offered(kExtCoopMatrixNV) && fns.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)
    available.push_back(kExtCoopMatrixNV);
  FeatureChain chain(api_version, available);
  fns.vkGetPhysicalDeviceFeatures2(device, &chain.features2_);
  chain.read(f);
  // An extension is enabled only where one of its features is.
  auto want = [&](const char* e, bool used) {
    if (used && has(available, e)) f.extensions.push_back(e);
  };
  want(kExt8Bit, f.storage_buffer_8 || f.uniform_and_storage_buffer_8 || f.push_constant_8);
  want(kExtFloat16Int8, f.shader_float16 || f.shader_int8);
  want(kExtMemoryModel, f.vulkan_memory_model);
  want(kExtSubgroupTypes, f.subgroup_extended_types);
  want(kExtAtomicInt64, f.buffer_int64_atomics || f.shared_int64_atomics);
  // Cooperative matrices count only with the shape and types vgpu's matmul uses, and with what
  // its shader also declares (float16 arithmetic, 16-bit storage, the Vulkan memory model).
  if (f.cooperative_matrix)
    f.cooperative_matrix =
        has_f16_matmul_shape(fns, device) && f.shader_float16 && f.storage_buffer_16 && f.vulkan_memory_model;
  want(kExtCoopMatrixNV, f.cooperative_matrix);
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceExternalMemoryHostPropertiesEXT host{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
  const bool host_memory = offered(kExtHostMemory);
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &subgroup;
  if (host_memory) subgroup.pNext = &host;
  fns.vkGetPhysicalDeviceProperties2(device, &p2);
  if (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) f.subgroup_operations = subgroup.supportedOperations;
  // Host memory used in place (Array::from_external): enabled wherever the driver offers it.
  if (host_memory && host.minImportedHostPointerAlignment > 0) {
    f.host_import_alignment = host.minImportedHostPointerAlignment;
    f.extensions.push_back(kExtHostMemory);
  }
  // A portability implementation (MoltenVK, or any layered driver) lists
  // VK_KHR_portability_subset, and the specification makes enabling it mandatory then.
  if (offered(kExtPortabilitySubset)) f.extensions.push_back(kExtPortabilitySubset);
  return f;
}

std::vector<std::string> DeviceFeatures::names() const {
  std::vector<std::string> out;
  auto add = [&](bool on, const char* name) {
    if (on) out.emplace_back(name);
  };
  add(shader_int16, "shader_int16");
  add(shader_int64, "shader_int64");
  add(shader_float64, "shader_float64");
  add(shader_float16, "shader_float16");
  add(shader_int8, "shader_int8");
  add(storage_buffer_16, "storage_buffer_16bit");
  add(uniform_and_storage_buffer_16, "uniform_buffer_16bit");
  add(push_constant_16, "push_constant_16bit");
  add(storage_buffer_8, "storage_buffer_8bit");
  add(uniform_and_storage_buffer_8, "uniform_buffer_8bit");
  add(push_constant_8, "push_constant_8bit");
  add(vulkan_memory_model, "vulkan_memory_model");
  add(vulkan_memory_model_device_scope, "vulkan_memory_model_device_scope");
  add(variable_pointers, "variable_pointers");
  add(buffer_int64_atomics, "buffer_int64_atomics");
  add(subgroup_extended_types, "subgroup_extended_types");
  const std::pair<VkSubgroupFeatureFlagBits, const char*> ops[] = {
      {VK_SUBGROUP_FEATURE_BASIC_BIT, "subgroup_basic"},
      {VK_SUBGROUP_FEATURE_VOTE_BIT, "subgroup_vote"},
      {VK_SUBGROUP_FEATURE_ARITHMETIC_BIT, "subgroup_arithmetic"},
      {VK_SUBGROUP_FEATURE_BALLOT_BIT, "subgroup_ballot"},
      {VK_SUBGROUP_FEATURE_SHUFFLE_BIT, "subgroup_shuffle"},
      {VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT, "subgroup_shuffle_relative"},
      {VK_SUBGROUP_FEATURE_CLUSTERED_BIT, "subgroup_clustered"},
      {VK_SUBGROUP_FEATURE_QUAD_BIT, "subgroup_quad"}};
  for (const auto& [bit, name] : ops) add(subgroup_operations & bit, name);
  add(host_import_alignment > 0, "host_memory_import");  // VK_EXT_external_memory_host
  add(cooperative_matrix, "cooperative_matrix");         // VK_NV_cooperative_matrix, 16×16×16 f16 → f32
  return out;
}

std::string capability_problem(std::string_view capability, const DeviceFeatures& f) {
  // What each capability a compute module may declare needs. Capabilities only other stages,
  // images or OpenCL use are absent on purpose: vgpu binds buffers only, so a module declaring
  // one is refused rather than handed to the driver.
  struct Need {
    bool DeviceFeatures::*feature;  // null: always available on a Vulkan 1.1 device
    VkSubgroupFeatureFlags subgroup;
    std::string what;
  };
  using F = DeviceFeatures;
  // The refusal names the Vulkan feature (or the subgroup operations) the capability needs.
  const auto feature = [](bool F::*member, std::string_view vk_name) {
    return Need{member, 0, "the " + std::string(vk_name) + " feature"};
  };
  const auto subgroup = [](VkSubgroupFeatureFlags bit, std::string_view operations) {
    return Need{nullptr, bit, std::string(operations) + " in compute shaders"};
  };
  // Leaked: a background calibration may open the device first (vgpu/backend/exit_order.hpp).
  static const auto& kNeeds = *new const std::map<std::string_view, Need>{
      {"Shader", {nullptr, 0, ""}},
      {"Matrix", {nullptr, 0, ""}},
      {"StorageImageExtendedFormats", {nullptr, 0, ""}},
      {"DeviceGroup", {nullptr, 0, ""}},
      {"Int16", feature(&F::shader_int16, "shaderInt16")},
      {"Int64", feature(&F::shader_int64, "shaderInt64")},
      {"Float64", feature(&F::shader_float64, "shaderFloat64")},
      {"Float16", feature(&F::shader_float16, "shaderFloat16")},
      {"Int8", feature(&F::shader_int8, "shaderInt8")},
      {"Int64Atomics", feature(&F::buffer_int64_atomics, "shaderBufferInt64Atomics")},
      {"StorageBufferArrayDynamicIndexing",
       feature(&F::storage_buffer_array_dynamic_indexing, "shaderStorageBufferArrayDynamicIndexing")},
      {"UniformBufferArrayDynamicIndexing",
       feature(&F::uniform_buffer_array_dynamic_indexing, "shaderUniformBufferArrayDynamicIndexing")},
      {"StorageBuffer16BitAccess", feature(&F::storage_buffer_16, "storageBuffer16BitAccess")},
      {"UniformAndStorageBuffer16BitAccess",
       feature(&F::uniform_and_storage_buffer_16, "uniformAndStorageBuffer16BitAccess")},
      {"StorageUniform16", feature(&F::uniform_and_storage_buffer_16, "uniformAndStorageBuffer16BitAccess")},
      {"StoragePushConstant16", feature(&F::push_constant_16, "storagePushConstant16")},
      {"StorageBuffer8BitAccess", feature(&F::storage_buffer_8, "storageBuffer8BitAccess")},
      {"UniformAndStorageBuffer8BitAccess",
       feature(&F::uniform_and_storage_buffer_8, "uniformAndStorageBuffer8BitAccess")},
      {"StoragePushConstant8", feature(&F::push_constant_8, "storagePushConstant8")},
      {"VariablePointersStorageBuffer", feature(&F::variable_pointers_storage_buffer, "variablePointersStorageBuffer")},
      {"VariablePointers", feature(&F::variable_pointers, "variablePointers")},
      {"VulkanMemoryModel", feature(&F::vulkan_memory_model, "vulkanMemoryModel")},
      {"CooperativeMatrixNV", feature(&F::cooperative_matrix, "cooperativeMatrix (VK_NV_cooperative_matrix)")},
      {"VulkanMemoryModelDeviceScope", feature(&F::vulkan_memory_model_device_scope, "vulkanMemoryModelDeviceScope")},
      {"GroupNonUniform", subgroup(VK_SUBGROUP_FEATURE_BASIC_BIT, "basic subgroup operations")},
      {"GroupNonUniformVote", subgroup(VK_SUBGROUP_FEATURE_VOTE_BIT, "subgroup vote operations")},
      {"GroupNonUniformArithmetic", subgroup(VK_SUBGROUP_FEATURE_ARITHMETIC_BIT, "subgroup arithmetic operations")},
      {"GroupNonUniformBallot", subgroup(VK_SUBGROUP_FEATURE_BALLOT_BIT, "subgroup ballot operations")},
      {"GroupNonUniformShuffle", subgroup(VK_SUBGROUP_FEATURE_SHUFFLE_BIT, "subgroup shuffle operations")},
      {"GroupNonUniformShuffleRelative",
       subgroup(VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT, "relative subgroup shuffles")},
      {"GroupNonUniformClustered", subgroup(VK_SUBGROUP_FEATURE_CLUSTERED_BIT, "clustered subgroup operations")},
      {"GroupNonUniformQuad", subgroup(VK_SUBGROUP_FEATURE_QUAD_BIT, "subgroup quad operations")},
  };
  const auto it = kNeeds.find(capability);
  if (it == kNeeds.end()) return "support that vgpu does not know how to check or enable";
  const Need& n = it->second;
  if (n.feature && !(f.*n.feature)) return n.what;
  if (n.subgroup && (f.subgroup_operations & n.subgroup) != n.subgroup) return n.what;
  return {};
}

}  // namespace vgpu::vulkan
