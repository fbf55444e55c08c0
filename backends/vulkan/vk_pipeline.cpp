// SPDX-License-Identifier: Apache-2.0
// backends/vulkan/vk_pipeline.cpp — layouts and specialised pipelines (their SPIR-V comes from
// vk_module.cpp), and the VkPipelineCache persisted in L2.
#include <algorithm>
#include <cstring>

#include "spirv_interface.hpp"
#include "vgpu/backend/kernel_l2.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/cache/payload_check.hpp"
#include "vgpu/error.hpp"
#include "vgpu/log.hpp"
#include "vgpu/shader/shader_tools.hpp"
#include "vk_device.hpp"

namespace vgpu::vulkan {
namespace {

cache::KernelKey pipeline_cache_key(const DeviceFingerprint& fp) {
  return cache::KernelKey{cache::hash64("vk-pipeline-cache"), fp.hash};
}

}  // namespace

VkKernelImpl::~VkKernelImpl() { device_.destroy_kernel(*this); }

// Runs in the constructor: what it finds is counted once core attaches the counters.
void VulkanDevice::load_pipeline_cache() {
  cache::DiskStore& store = l2_store();
  std::vector<std::uint8_t> data;
  cache::LoadOutcome outcome;
  if (auto blob = store.load(cache::EntryKind::vk_pipeline_cache, pipeline_cache_key(physical_.info.fingerprint),
                             physical_.info.fingerprint, &outcome)) {
    // The driver must only see data whose 32-byte header names this exact device and cache
    // UUID; anything else is dropped here rather than trusted to the driver. (The store has
    // already checked the device-independent part: size, headerSize 32, version one.)
    const auto& p = physical_.properties;
    cache::PipelineCacheIdentity self{p.vendorID, p.deviceID, {}};
    static_assert(sizeof self.uuid == VK_UUID_SIZE);
    std::memcpy(self.uuid.data(), p.pipelineCacheUUID, VK_UUID_SIZE);
    if (const std::string why = cache::pipeline_cache_problem(*blob, &self); why.empty()) {
      data = std::move(*blob);
      ++open_l2_hits_;
    } else {
      store.reject(cache::EntryKind::vk_pipeline_cache, pipeline_cache_key(physical_.info.fingerprint), "header");
      ++open_l2_rejected_;
    }
  } else if (outcome == cache::LoadOutcome::rejected) {
    ++open_l2_rejected_;
  }
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  ci.initialDataSize = data.size();
  ci.pInitialData = data.empty() ? nullptr : data.data();
  if (fn_.vkCreatePipelineCache(device_, &ci, nullptr, &pipeline_cache_) != VK_SUCCESS) {
    pipeline_cache_ = VK_NULL_HANDLE;
    if (!data.empty()) {
      // The driver refused the blob: drop it (or every later process would be refused too)
      // and start empty.
      store.reject(cache::EntryKind::vk_pipeline_cache, pipeline_cache_key(physical_.info.fingerprint), "driver");
      --open_l2_hits_;
      ++open_l2_rejected_;
      data.clear();
    }
    ci.initialDataSize = 0;
    ci.pInitialData = nullptr;
    check_vk(fn_.vkCreatePipelineCache(device_, &ci, nullptr, &pipeline_cache_), "vkCreatePipelineCache");
  }
  saved_cache_bytes_ = data.size();
}

void VulkanDevice::save_pipeline_cache() {
  std::lock_guard lock(cache_save_mutex_);
  cache::DiskStore& store = l2_store();
  if (!store.enabled() || pipeline_cache_ == VK_NULL_HANDLE) return;
  std::size_t size = 0;
  if (fn_.vkGetPipelineCacheData(device_, pipeline_cache_, &size, nullptr) != VK_SUCCESS || size == saved_cache_bytes_)
    return;
  std::vector<std::uint8_t> data(size);
  if (fn_.vkGetPipelineCacheData(device_, pipeline_cache_, &size, data.data()) != VK_SUCCESS) return;
  data.resize(size);
  if (store.store(cache::EntryKind::vk_pipeline_cache, pipeline_cache_key(physical_.info.fingerprint),
                  physical_.info.fingerprint, data, 0, "pipeline cache"))
    counters().l2_writes.fetch_add(1, std::memory_order_relaxed);
  saved_cache_bytes_ = size;
}

VulkanDevice::Layouts VulkanDevice::layouts_for(const std::vector<Descriptor>& descriptors, std::uint32_t push_bytes) {
  std::string key = std::to_string(push_bytes);
  for (const Descriptor& d : descriptors)
    key += "," + std::to_string(d.set) + ":" + std::to_string(d.binding) + ":" + std::to_string(d.type);
  std::lock_guard lock(layout_mutex_);
  if (auto it = layouts_.find(key); it != layouts_.end()) return it->second;
  std::uint32_t set_count = 0;
  for (const Descriptor& d : descriptors) set_count = std::max(set_count, d.set + 1);
  Layouts l;
  for (std::uint32_t set = 0; set < set_count; ++set) {
    std::vector<VkDescriptorSetLayoutBinding> bindings;
    for (const Descriptor& d : descriptors) {
      if (d.set != set) continue;
      VkDescriptorSetLayoutBinding b{};
      b.binding = d.binding;
      b.descriptorType = d.type;
      b.descriptorCount = 1;
      b.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
      bindings.push_back(b);
    }
    VkDescriptorSetLayoutCreateInfo dci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    dci.bindingCount = static_cast<std::uint32_t>(bindings.size());
    dci.pBindings = bindings.data();
    VkDescriptorSetLayout layout = VK_NULL_HANDLE;
    check_vk(fn_.vkCreateDescriptorSetLayout(device_, &dci, nullptr, &layout), "vkCreateDescriptorSetLayout");
    l.set_layouts.push_back(layout);
  }
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
  VkPipelineLayoutCreateInfo pci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pci.setLayoutCount = set_count;
  pci.pSetLayouts = l.set_layouts.data();
  pci.pushConstantRangeCount = push_bytes ? 1 : 0;
  pci.pPushConstantRanges = push_bytes ? &range : nullptr;
  check_vk(fn_.vkCreatePipelineLayout(device_, &pci, nullptr, &l.pipeline_layout), "vkCreatePipelineLayout");
  layouts_.emplace(key, l);
  return l;
}

VkResult VulkanDevice::build_pipeline(VkKernelImpl& k, const std::vector<std::uint32_t>& words,
                                      const std::string& entry, const std::vector<shader::SpecEntry>& spec) {
  VkShaderModuleCreateInfo mci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mci.codeSize = words.size() * 4;
  mci.pCode = words.data();
  if (const VkResult r = fn_.vkCreateShaderModule(device_, &mci, nullptr, &k.module); r != VK_SUCCESS) return r;
  // Specialization (the body form's local size at ids 2040..2042, a shader's own constants) is
  // applied here, so one module serves every value.
  std::vector<VkSpecializationMapEntry> entries;
  std::vector<std::uint32_t> data;
  for (const shader::SpecEntry& e : spec) {
    entries.push_back({e.id, static_cast<std::uint32_t>(data.size() * 4), 4});
    data.push_back(e.bits);
  }
  VkSpecializationInfo info{static_cast<std::uint32_t>(entries.size()), entries.data(), data.size() * 4, data.data()};
  VkComputePipelineCreateInfo pci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  pci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pci.stage.module = k.module;
  pci.stage.pName = entry.c_str();
  pci.stage.pSpecializationInfo = entries.empty() ? nullptr : &info;
  pci.layout = k.layout;
  const VkResult r = fn_.vkCreateComputePipelines(device_, pipeline_cache_, 1, &pci, nullptr, &k.pipeline);
  if (r != VK_SUCCESS) {
    fn_.vkDestroyShaderModule(device_, k.module, nullptr);
    k.module = VK_NULL_HANDLE;
    k.pipeline = VK_NULL_HANDLE;
  } else {
    counters().pipeline_builds.fetch_add(1, std::memory_order_relaxed);
  }
  return r;
}

std::unique_ptr<KernelImpl> VulkanDevice::compile(const KernelSource& source, const DialectSource& code,
                                                  const CompileOptions& options) {
  auto k = std::make_unique<VkKernelImpl>(*this);
  const bool body = code.dialect == dialect::glsl;
  const std::string entry = body || code.entry.empty() ? std::string("main") : code.entry;
  std::vector<std::uint32_t> slots;
  for (const BindingDecl& b : source.bindings) slots.push_back(b.slot);
  std::sort(slots.begin(), slots.end());
  const std::array<std::uint32_t, 3> body_size = options.workgroup_size_or_default();
  const PipelineInterface pipeline{slots, (source.params_size + 3u) & ~3u, body_size};

  Module m = module_for(source, code, options, body ? &pipeline : nullptr, true);
  std::vector<shader::SpecEntry> spec = interface_for(*k, source, code, options, *m.words);
  const Layouts l = layouts_for(k->descriptors, k->push_bytes);
  k->layout = l.pipeline_layout;
  k->set_layouts = l.set_layouts;

  VkResult r = build_pipeline(*k, *m.words, entry, spec);
  const bool out_of_memory = r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY;
  if (r != VK_SUCCESS && m.from_l2 && !out_of_memory) {
    // A cached entry the driver refuses (at module or pipeline creation) costs a recompile,
    // never a failure: drop it and build from the GLSL source.
    const DeviceFingerprint& fp = physical_.info.fingerprint;
    KernelL2Entry(counters(), l2_store(), cache::EntryKind::spirv, module_key(source, code, options, fp), fp)
        .reject("driver");
    forget_module(source, code, options);
    m = module_for(source, code, options, body ? &pipeline : nullptr, false);
    r = build_pipeline(*k, *m.words, entry, spec);
  }
  if (r != VK_SUCCESS) {
    if (r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY) fail_vk(r, "vkCreateComputePipelines");
    fail(ErrorCategory::compile_error,
         "the Vulkan driver could not build kernel '" + source.name + "' from its SPIR-V (" + result_name(r) + ").",
         "check that the kernel stays within the device limits (shared memory, workgroup size: vgpu-probe lists "
         "them); if it was compiled from a cached entry, run vgpu-probe cache clear.");
  }
  save_pipeline_cache();
  name_object(VK_OBJECT_TYPE_SHADER_MODULE, reinterpret_cast<std::uint64_t>(k->module), source.name);
  name_object(VK_OBJECT_TYPE_PIPELINE, reinterpret_cast<std::uint64_t>(k->pipeline), source.name);
  return k;
}

void VulkanDevice::destroy_kernel(VkKernelImpl& k) {
  // No queued work runs it any more: core frees a kernel only after its last use has run.
  if (process_exiting()) return;
  if (k.pipeline) fn_.vkDestroyPipeline(device_, k.pipeline, nullptr);
  if (k.module) fn_.vkDestroyShaderModule(device_, k.module, nullptr);
}

}  // namespace vgpu::vulkan
