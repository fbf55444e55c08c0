// backends/vulkan/vk_pipeline.cpp — SPIR-V from L3/L2/run-time GLSL, layouts and pipelines,
// and the VkPipelineCache persisted in L2.
#include <chrono>
#include <cstring>

#include "spirv_interface.hpp"
#include "vgpu/kernels/glsl_source.hpp"
#include "vgpu/backend/kernel_l2.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/cache/payload_check.hpp"
#include "vgpu/cache/precompiled.hpp"
#include "vgpu/error.hpp"
#include "vgpu/log.hpp"
#include "vgpu/shader/shader_tools.hpp"
#include "vk_device.hpp"

namespace vgpu::vulkan {
namespace {

constexpr std::uint32_t kSpirvMagic = 0x07230203;

cache::KernelKey pipeline_cache_key(const DeviceFingerprint& fp) {
  return cache::KernelKey{cache::hash64("vk-pipeline-cache"), fp.hash};
}

std::vector<std::uint8_t> as_bytes(const std::vector<std::uint32_t>& words) {
  std::vector<std::uint8_t> b(words.size() * 4);
  std::memcpy(b.data(), words.data(), b.size());
  return b;
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
                  physical_.info.fingerprint, data, 0))
    counters().l2_writes.fetch_add(1, std::memory_order_relaxed);
  saved_cache_bytes_ = size;
}

VulkanDevice::Layouts VulkanDevice::layouts_for(const std::vector<std::uint32_t>& slots, std::uint32_t push_bytes) {
  std::string key = std::to_string(push_bytes);
  for (auto s : slots) key += "," + std::to_string(s);
  std::lock_guard lock(layout_mutex_);
  if (auto it = layouts_.find(key); it != layouts_.end()) return it->second;
  std::vector<VkDescriptorSetLayoutBinding> bindings;
  for (auto s : slots) {
    VkDescriptorSetLayoutBinding b{};
    b.binding = s;
    b.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    b.descriptorCount = 1;
    b.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    bindings.push_back(b);
  }
  Layouts l;
  VkDescriptorSetLayoutCreateInfo dci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dci.bindingCount = static_cast<std::uint32_t>(bindings.size());
  dci.pBindings = bindings.data();
  check_vk(fn_.vkCreateDescriptorSetLayout(device_, &dci, nullptr, &l.set_layout), "vkCreateDescriptorSetLayout");
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
  VkPipelineLayoutCreateInfo pci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pci.setLayoutCount = 1;
  pci.pSetLayouts = &l.set_layout;
  pci.pushConstantRangeCount = push_bytes ? 1 : 0;
  pci.pPushConstantRanges = push_bytes ? &range : nullptr;
  check_vk(fn_.vkCreatePipelineLayout(device_, &pci, nullptr, &l.pipeline_layout), "vkCreatePipelineLayout");
  layouts_.emplace(key, l);
  return l;
}

std::vector<std::uint32_t> VulkanDevice::spirv_for(const KernelSource& source, const DialectSource& code,
                                                   const CompileOptions& options, const PipelineInterface& pipeline, bool use_l2, bool* from_l2) {
  *from_l2 = false;
  // The driver only ever sees a module whose descriptors, push constants and workgroup size
  // match the pipeline built for it: a mismatch is undefined behaviour (lavapipe crashed on
  // resealed L2 entries with a damaged Binding literal). From L2 it costs a recompile; from L3
  // or the GLSL compiler it is the kernel's own error, and nothing is stored.
  auto check = [&](const std::vector<std::uint32_t>& words) {
    if (std::string mismatch = spirv_interface_problem(words, pipeline); !mismatch.empty())
      fail(ErrorCategory::compile_error, "GLSL kernel '" + source.name + "' compiled, but " + mismatch + ".",
           "declare every buffer the GLSL uses in KernelSource::bindings (set 0, its binding as the slot), keep the "
           "VGPU_PARAMS block within KernelSource::params_size, and leave the workgroup size to CompileOptions.");
    return words;
  };
  // L3: built-in kernels ship as SPIR-V compiled by glslc at build time.
  if (const auto* pre = cache::find_precompiled_spirv(code.code, options.defines)) {
    counters().l3_hits.fetch_add(1, std::memory_order_relaxed);
    return check(*pre);
  }
  // L2: SPIR-V of user kernels compiled by an earlier process; the store has validated it.
  const DeviceFingerprint& fp = physical_.info.fingerprint;
  KernelL2Entry l2(counters(), l2_store(), cache::EntryKind::spirv,
                   cache::make_kernel_key(source, code, options, fp), fp);
  if (l2.enabled() && use_l2) {
    if (auto blob = l2.load()) {
      std::vector<std::uint32_t> words(blob->size() / 4);
      if (blob->size() % 4 == 0 && !words.empty()) std::memcpy(words.data(), blob->data(), blob->size());
      if (words.empty() || words[0] != kSpirvMagic) {
        l2.reject("not SPIR-V");  // the store's check refuses these first; kept for safety
      } else if (!spirv_interface_problem(words, pipeline).empty()) {
        l2.reject("invalid");
      } else {
        l2.hit();
        *from_l2 = true;
        return words;
      }
    }
  }
  const auto start = std::chrono::steady_clock::now();
  const std::string text = kernels::assemble_glsl(code.code, options.defines, options.workgroup_size_or_default(),
                                                  kernels::GlslTarget::vulkan, 0);
  std::vector<std::uint32_t> words = check(shader::compile_glsl_body(text, source.name));
  counters().source_compiles.fetch_add(1, std::memory_order_relaxed);
  const auto cost = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
  l2.store(as_bytes(words), static_cast<std::uint64_t>(cost.count()));
  return words;
}

VkResult VulkanDevice::build_pipeline(VkKernelImpl& k, const std::vector<std::uint32_t>& words,
                                      const CompileOptions& options) {
  VkShaderModuleCreateInfo mci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mci.codeSize = words.size() * 4;
  mci.pCode = words.data();
  if (const VkResult r = fn_.vkCreateShaderModule(device_, &mci, nullptr, &k.module); r != VK_SUCCESS) return r;
  // The workgroup size is a specialisation constant, so one SPIR-V serves every size.
  const std::array<std::uint32_t, 3> size = options.workgroup_size_or_default();
  const std::uint32_t wg[3] = {size[0], size[1], size[2]};
  const VkSpecializationMapEntry entries[3] = {{0, 0, 4}, {1, 4, 4}, {2, 8, 4}};
  VkSpecializationInfo spec{3, entries, sizeof wg, wg};
  VkComputePipelineCreateInfo pci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  pci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pci.stage.module = k.module;
  pci.stage.pName = "main";
  pci.stage.pSpecializationInfo = &spec;
  pci.layout = k.layout;
  const VkResult r = fn_.vkCreateComputePipelines(device_, pipeline_cache_, 1, &pci, nullptr, &k.pipeline);
  if (r != VK_SUCCESS) {
    fn_.vkDestroyShaderModule(device_, k.module, nullptr);
    k.module = VK_NULL_HANDLE;
    k.pipeline = VK_NULL_HANDLE;
  }
  return r;
}

std::unique_ptr<KernelImpl> VulkanDevice::compile(const KernelSource& source, const DialectSource& code,
                                                  const CompileOptions& options) {
  auto k = std::make_unique<VkKernelImpl>(*this);
  for (const BindingDecl& b : source.bindings) k->slots.push_back(b.slot);
  std::sort(k->slots.begin(), k->slots.end());
  k->push_bytes = (source.params_size + 3u) & ~3u;
  const Layouts l = layouts_for(k->slots, k->push_bytes);
  k->layout = l.pipeline_layout;
  k->set_layout = l.set_layout;

  bool from_l2 = false;
  const PipelineInterface pipeline{k->slots, k->push_bytes, options.workgroup_size_or_default()};
  std::vector<std::uint32_t> words = spirv_for(source, code, options, pipeline, true, &from_l2);
  VkResult r = build_pipeline(*k, words, options);
  const bool out_of_memory = r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY;
  if (r != VK_SUCCESS && from_l2 && !out_of_memory) {
    // A cached entry the driver refuses (at module or pipeline creation) costs a recompile,
    // never a failure: drop it and build from the GLSL source.
    const DeviceFingerprint& fp = physical_.info.fingerprint;
    KernelL2Entry(counters(), l2_store(), cache::EntryKind::spirv,
                  cache::make_kernel_key(source, code, options, fp), fp)
        .reject("driver");
    words = spirv_for(source, code, options, pipeline, false, &from_l2);
    r = build_pipeline(*k, words, options);
  }
  if (r != VK_SUCCESS) {
    if (r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY) fail_vk(r, "vkCreateComputePipelines");
    fail(ErrorCategory::compile_error,
         "the Vulkan driver could not build kernel '" + source.name + "' from its SPIR-V (" + result_name(r) + ").",
         "check that the kernel stays within the device limits (shared memory, workgroup size: vgpu-probe lists "
         "them); if it was compiled from a cached entry, run vgpu-probe cache clear.");
  }
  save_pipeline_cache();
  return k;
}

void VulkanDevice::destroy_kernel(VkKernelImpl& k) {
  // No queued work runs it any more: core frees a kernel only after its last use has run.
  if (process_exiting()) return;
  if (k.pipeline) fn_.vkDestroyPipeline(device_, k.pipeline, nullptr);
  if (k.module) fn_.vkDestroyShaderModule(device_, k.module, nullptr);
}

}  // namespace vgpu::vulkan
