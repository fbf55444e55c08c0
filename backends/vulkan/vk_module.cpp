// SPDX-License-Identifier: Apache-2.0
// backends/vulkan/vk_module.cpp — a kernel's SPIR-V module (L3, the device's module cache, L2 or
// the front end) and the interface its pipeline gets: descriptors, push constants and
// specialization, from the kernel's declared slots (body form) or from reflection.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "vgpu/backend/kernel_l2.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/cache/precompiled.hpp"
#include "vgpu/error.hpp"
#include "vgpu/kernels/glsl_source.hpp"
#include "vk_device.hpp"

namespace vgpu::vulkan {
namespace {

constexpr std::uint32_t kSpirvMagic = 0x07230203;
static_assert(kBodyLocalSizeId == kReservedSpecIdFirst, "the body prelude's local size takes vgpu's reserved ids");

std::vector<std::uint8_t> as_bytes(const std::vector<std::uint32_t>& words) {
  std::vector<std::uint8_t> b(words.size() * 4);
  std::memcpy(b.data(), words.data(), b.size());
  return b;
}

// What the module of a kernel is keyed by: the options without specialization constants (only
// pipelines take those). The local size stays in the key as before (the body form compiles
// one module per size; a complete shader usually leaves it unset), so L2 keys of kernels
// without constants are unchanged.
CompileOptions module_options(const CompileOptions& options) {
  CompileOptions m = options;
  m.spec_constants.clear();
  return m;
}

shader::TargetEnv target_env(std::uint32_t api_version) {
  if (api_version >= VK_API_VERSION_1_3) return shader::TargetEnv::vulkan1_3;
  if (api_version >= VK_API_VERSION_1_2) return shader::TargetEnv::vulkan1_2;
  return shader::TargetEnv::vulkan1_1;
}

}  // namespace

void VulkanDevice::check_capabilities(const KernelReflection& r, const std::string& name) const {
  // Before any VkShaderModule exists: a module needing a feature the device was not created
  // with is invalid to create, whatever the driver would make of it.
  for (const std::string& cap : r.capabilities)
    if (const std::string need = capability_problem(cap, physical_.features); !need.empty())
      fail(ErrorCategory::not_supported,
           "kernel '" + name + "' declares the SPIR-V capability " + cap + ", which needs " + need + "; " +
               physical_.info.name + " does not have it.",
           "rewrite the shader without what needs " + cap +
               " (vgpu-probe lists the device's features), or run it "
               "on a device that has it (VGPU_DEVICE).");
}

cache::KernelKey VulkanDevice::module_key(const KernelSource& source, const DialectSource& code,
                                          const CompileOptions& options, const DeviceFingerprint& fp) {
  return cache::make_kernel_key(source, code, module_options(options), fp);
}

void VulkanDevice::forget_module(const KernelSource& source, const DialectSource& code, const CompileOptions& options) {
  const cache::KernelKey key = module_key(source, code, options, physical_.info.fingerprint);
  std::lock_guard lock(module_mutex_);
  modules_.erase({key.hi, key.lo});
}

VulkanDevice::Module VulkanDevice::module_for(const KernelSource& source, const DialectSource& code,
                                              const CompileOptions& options, const PipelineInterface* pipeline,
                                              bool use_l2) {
  const bool body = code.dialect == dialect::glsl;
  // The driver only ever sees a body-form module whose descriptors, push constants and
  // workgroup size match the pipeline built for it: a mismatch is undefined behaviour
  // (lavapipe crashed on resealed L2 entries with a damaged Binding literal). From L2 it costs
  // a recompile; from L3 or the GLSL compiler it is the kernel's own error, and nothing is
  // stored. Other dialects get their pipeline from their own reflection.
  auto check = [&](Words words) {
    if (pipeline)
      if (std::string mismatch = spirv_interface_problem(*words, *pipeline); !mismatch.empty())
        fail(ErrorCategory::compile_error, "GLSL kernel '" + source.name + "' compiled, but " + mismatch + ".",
             "declare every buffer the GLSL uses in KernelSource::bindings (set 0, its binding as the slot), keep the "
             "VGPU_PARAMS block within KernelSource::params_size, leave the workgroup size to CompileOptions, and "
             "give the body's own specialization constants ids below 2040.");
    return Module{std::move(words), false};
  };
  // L3: built-in kernels ship as SPIR-V compiled by glslc at build time.
  if (body)
    if (const auto* pre = cache::find_precompiled_spirv(code.code, options.defines)) {
      counters().l3_hits.fetch_add(1, std::memory_order_relaxed);
      return check(std::make_shared<const std::vector<std::uint32_t>>(*pre));
    }
  const DeviceFingerprint& fp = physical_.info.fingerprint;
  const cache::KernelKey key = module_key(source, code, options, fp);
  {
    std::lock_guard lock(module_mutex_);
    if (auto it = modules_.find({key.hi, key.lo}); it != modules_.end()) return check(it->second);
  }
  auto remember = [&](Module m) {
    std::lock_guard lock(module_mutex_);
    modules_.emplace(std::make_pair(key.hi, key.lo), m.words);
    return m;
  };
  if (code.dialect == dialect::spirv) {
    // The module is the source: validated once per device, never stored again in L2.
    return remember(Module{std::make_shared<const std::vector<std::uint32_t>>(
                               shader::spirv_words(code.code, target_env(physical_.features.api_version), source.name)),
                           false});
  }
  // L2: SPIR-V of user kernels compiled by an earlier process; the store has validated it.
  KernelL2Entry l2(counters(), l2_store(), cache::EntryKind::spirv, key, fp);
  if (l2.enabled() && use_l2) {
    if (auto blob = l2.load()) {
      std::vector<std::uint32_t> words(blob->size() / 4);
      if (blob->size() % 4 == 0 && !words.empty()) std::memcpy(words.data(), blob->data(), blob->size());
      if (words.empty() || words[0] != kSpirvMagic) {
        l2.reject("not SPIR-V");  // the store's check refuses these first; kept for safety
      } else if (pipeline && !spirv_interface_problem(words, *pipeline).empty()) {
        l2.reject("invalid");
      } else {
        l2.hit();
        Module m = remember(Module{std::make_shared<const std::vector<std::uint32_t>>(std::move(words)), true});
        m.from_l2 = true;
        return m;
      }
    }
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::uint32_t> words;
  if (body) {
    const std::string text = kernels::assemble_glsl(code.code, options.defines, options.workgroup_size_or_default(),
                                                    kernels::GlslTarget::vulkan, 0);
    words = shader::compile_glsl_body(text, source.name);
  } else {
    // Compiled for Vulkan 1.1 (SPIR-V 1.3), the environment L2 validates its entries for.
    words = shader::compile_glsl_shader(code.code, options.defines, shader::TargetEnv::vulkan1_1, source.name);
  }
  counters().source_compiles.fetch_add(1, std::memory_order_relaxed);
  Module m = check(std::make_shared<const std::vector<std::uint32_t>>(std::move(words)));
  const auto cost = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
  l2.store(as_bytes(*m.words), static_cast<std::uint64_t>(cost.count()), source.name);
  return remember(std::move(m));
}

std::vector<shader::SpecEntry> VulkanDevice::interface_for(VkKernelImpl& k, const KernelSource& source,
                                                           const DialectSource& code, const CompileOptions& options,
                                                           const std::vector<std::uint32_t>& words) {
  const bool body = code.dialect == dialect::glsl;
  const std::string entry = body || code.entry.empty() ? std::string("main") : code.entry;
  const KernelReflection defaults = shader::reflect(words, entry, source.name);
  check_capabilities(defaults, source.name);
  std::array<std::uint32_t, 3> size{};
  if (body) {
    // The prelude's local size takes ids 2040..2042; any other reserved id is the body's own.
    for (const ReflectedSpecConstant& c : defaults.spec_constants)
      if (c.id >= kReservedSpecIdFirst && c.id <= kReservedSpecIdLast && c.id > kReservedSpecIdFirst + 2)
        fail(ErrorCategory::invalid_argument,
             "GLSL kernel '" + source.name + "' declares specialization constant " + std::to_string(c.id) +
                 ", in the range " + std::to_string(kReservedSpecIdFirst) + ".." + std::to_string(kReservedSpecIdLast) +
                 " that vgpu keeps for itself.",
             "give the kernel's own constants constant_id values below " + std::to_string(kReservedSpecIdFirst) + ".");
    CompileOptions o = options;
    o.workgroup_size = options.workgroup_size_or_default();
    const auto spec = shader::resolve_specialization(defaults, o, true, source.name, &size);
    for (const BindingDecl& b : source.bindings)
      k.descriptors.push_back({0, b.slot, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER});
    std::sort(k.descriptors.begin(), k.descriptors.end(),
              [](const Descriptor& a, const Descriptor& b) { return a.binding < b.binding; });
    k.push_bytes = (source.params_size + 3u) & ~3u;
    return spec;
  }
  const auto spec = shader::resolve_specialization(defaults, options, false, source.name, &size);
  KernelReflection r = shader::reflect(words, entry, source.name, spec);
  r.local_size = size;
  for (const ReflectedBinding& b : r.bindings) {
    if (!source.bindings.empty() && std::none_of(source.bindings.begin(), source.bindings.end(),
                                                 [&](const BindingDecl& d) { return d.slot == b.binding; }))
      fail(ErrorCategory::invalid_argument,
           "kernel '" + source.name + "' uses binding " + std::to_string(b.binding) + " ('" + b.name +
               "'), which its KernelSource::bindings does not declare.",
           "declare slot " + std::to_string(b.binding) +
               " in KernelSource::bindings, or declare none and let vgpu "
               "take the shader's own bindings.");
    k.descriptors.push_back({b.set, b.binding,
                             b.kind == ResourceKind::uniform_buffer ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER
                                                                    : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER});
  }
  // What is pushed is the shader's own block; the dispatch's params block must cover it.
  if (source.params_size != 0 && source.params_size < r.push_constant_bytes)
    fail(ErrorCategory::invalid_argument,
         "kernel '" + source.name + "' declares a " + std::to_string(source.params_size) +
             "-byte params block but its push-constant block takes " + std::to_string(r.push_constant_bytes) +
             " bytes.",
         "set KernelSource::params_size to " + std::to_string(r.push_constant_bytes) + ".");
  if (r.push_constant_bytes > physical_.properties.limits.maxPushConstantsSize)
    fail(ErrorCategory::not_supported,
         "kernel '" + source.name + "' has a " + std::to_string(r.push_constant_bytes) +
             "-byte push-constant block; the device allows " +
             std::to_string(physical_.properties.limits.maxPushConstantsSize) + ".",
         "move the rest of the block into a uniform or storage buffer.");
  k.push_bytes = (r.push_constant_bytes + 3u) & ~3u;
  k.reflected = std::move(r);
  return spec;
}

}  // namespace vgpu::vulkan
