// SPDX-License-Identifier: Apache-2.0
// backends/vulkan/vk_dispatch.cpp — descriptor sets, recorded command buffers and submission.
#include <algorithm>
#include <utility>

#include "vgpu/error.hpp"
#include "vk_device.hpp"

namespace vgpu::vulkan {
namespace {

constexpr std::uint32_t kSetsPerPool = 256;
constexpr std::uint32_t kDescriptorsPerPool = 2048;

}  // namespace

VkBindingSetImpl::~VkBindingSetImpl() { device_.free_binding_set(*this); }
VkBatchImpl::~VkBatchImpl() { device_.release_batch(*this); }

std::unique_ptr<BindingSetImpl> VulkanDevice::bind(KernelImpl& kernel, std::span<BufferImpl* const> by_slot) {
  auto& k = static_cast<VkKernelImpl&>(kernel);
  // Core binds every slot the kernel declares; a reflected binding it was not told of is the
  // caller's error, never a null descriptor.
  for (const Descriptor& d : k.descriptors)
    if (d.binding >= by_slot.size() || !by_slot[d.binding])
      fail(ErrorCategory::invalid_argument,
           "the kernel uses binding " + std::to_string(d.binding) + " (set " + std::to_string(d.set) +
               "), but no buffer is bound to slot " + std::to_string(d.binding) + ".",
           "bind a buffer to every binding the shader declares (Kernel::bindings() lists them).");
  // Imported host memory starts where the caller's bytes do, inside its VkBuffer: a uniform
  // binding needs that offset aligned more strictly than a storage binding (import_host).
  const VkDeviceSize ubo_align = physical_.properties.limits.minUniformBufferOffsetAlignment;
  for (const Descriptor& d : k.descriptors) {
    const auto& a = static_cast<VkBufferImpl*>(by_slot[d.binding])->alloc;
    if (d.type == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER && ubo_align > 1 && a.base % ubo_align != 0)
      fail(ErrorCategory::not_supported,
           "binding " + std::to_string(d.binding) + " is a uniform buffer, and the host memory bound to it starts " +
               std::to_string(a.base % ubo_align) + " bytes past the " + std::to_string(ubo_align) +
               "-byte alignment " + physical_.info.name + " needs for uniform buffers.",
           "copy the data in (Array::from_host, or asarray without copy=False), or allocate the host memory aligned "
           "to " +
               std::to_string(ubo_align) + " bytes.");
  }
  auto set = std::make_unique<VkBindingSetImpl>(*this);
  set->sets.resize(k.set_layouts.size());
  if (!k.set_layouts.empty()) {
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorSetCount = static_cast<std::uint32_t>(k.set_layouts.size());
    ai.pSetLayouts = k.set_layouts.data();
    VkResult r = VK_ERROR_OUT_OF_POOL_MEMORY;
    for (auto it = descriptor_pools_.rbegin(); it != descriptor_pools_.rend() && r != VK_SUCCESS; ++it) {
      ai.descriptorPool = *it;
      r = fn_.vkAllocateDescriptorSets(device_, &ai, set->sets.data());
      if (r == VK_SUCCESS) set->pool = *it;
    }
    if (r != VK_SUCCESS) {
      // Pools grow by chaining: a full pool is kept for the sets it holds.
      const VkDescriptorPoolSize sizes[2] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kDescriptorsPerPool},
                                             {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, kDescriptorsPerPool / 4}};
      VkDescriptorPoolCreateInfo pci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
      pci.flags = VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT;
      pci.maxSets = kSetsPerPool;
      pci.poolSizeCount = 2;
      pci.pPoolSizes = sizes;
      VkDescriptorPool pool = VK_NULL_HANDLE;
      check_vk(fn_.vkCreateDescriptorPool(device_, &pci, nullptr, &pool), "vkCreateDescriptorPool");
      descriptor_pools_.push_back(pool);
      ai.descriptorPool = pool;
      check_vk(fn_.vkAllocateDescriptorSets(device_, &ai, set->sets.data()), "vkAllocateDescriptorSets");
      set->pool = pool;
    }
  }
  std::vector<VkDescriptorBufferInfo> infos(k.descriptors.size());
  std::vector<VkWriteDescriptorSet> writes(k.descriptors.size());
  for (std::size_t i = 0; i < k.descriptors.size(); ++i) {
    const Descriptor& d = k.descriptors[i];
    const auto& a = static_cast<VkBufferImpl*>(by_slot[d.binding])->alloc;
    // A uniform buffer's range may not pass maxUniformBufferRange (VUID-VkWriteDescriptorSet-descriptorType-00332),
    // however large the buffer; the shader's block is what it reads.
    // An import's VkBuffer spans whole pages around the caller's bytes: the range is those bytes,
    // rounded up to a whole 32-bit word (inside the page), as every storage buffer vgpu allocates
    // is: GLSL addresses storage in words, and 16-bit arrays of odd length end inside one.
    const VkDeviceSize range = d.type == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER
                                   ? std::min<VkDeviceSize>(a.size, physical_.properties.limits.maxUniformBufferRange)
                               : a.imported ? (a.size + 3) / 4 * 4
                                            : VK_WHOLE_SIZE;
    infos[i] = VkDescriptorBufferInfo{a.buffer, a.base, range};
    writes[i] = VkWriteDescriptorSet{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set->sets[d.set];
    writes[i].dstBinding = d.binding;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = d.type;
    writes[i].pBufferInfo = &infos[i];
  }
  fn_.vkUpdateDescriptorSets(device_, static_cast<std::uint32_t>(writes.size()), writes.data(), 0, nullptr);
  return set;
}

void VulkanDevice::free_binding_set(VkBindingSetImpl& b) {
  // No queued dispatch reads the sets any more (core frees them after their last use has run).
  if (b.sets.empty() || b.pool == VK_NULL_HANDLE || process_exiting()) return;
  fn_.vkFreeDescriptorSets(device_, b.pool, static_cast<std::uint32_t>(b.sets.size()), b.sets.data());
}

std::unique_ptr<RecordedBatchImpl> VulkanDevice::record(std::span<const DispatchCommand> commands) {
  auto batch = std::make_unique<VkBatchImpl>(*this);
  batch->commands.assign(commands.begin(), commands.end());
  batch->cmd = take_cmd();
  record_commands(*batch);
  return batch;
}

VkCommandBuffer VulkanDevice::batch_cmd(VkBatchImpl& batch) {
  // Timing was switched since the batch was recorded: its command buffer has (or lacks) the
  // timestamps. Recorded again into a fresh one; the old one may still be queued, so it is
  // recycled after the next submission, which runs after every earlier one.
  if (timing_dispatches() == static_cast<bool>(batch.timestamps) || batch.commands.empty()) return batch.cmd;
  VkCommandBuffer fresh = take_cmd();
  VkCommandBuffer old = std::exchange(batch.cmd, fresh);
  batch.timestamps.reset();
  retired_cmds_.push_back(old);
  record_commands(batch);
  return batch.cmd;
}

void VulkanDevice::record_commands(VkBatchImpl& batch) {
  const std::span<const DispatchCommand> commands = batch.commands;
  // Simultaneous use lets a resubmitted batch be queued again before its last run finished.
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT;
  check_vk(fn_.vkBeginCommandBuffer(batch.cmd, &bi), "vkBeginCommandBuffer");
  if (timing_dispatches() && !commands.empty()) batch.timestamps = begin_timestamps(batch.cmd, commands);
  const VkQueryPool stamps = batch.timestamps ? batch.timestamps->pool : VK_NULL_HANDLE;
  barrier(batch.cmd, false);
  VkPipeline bound = VK_NULL_HANDLE;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    const DispatchCommand& c = commands[i];
    auto& k = *static_cast<VkKernelImpl*>(c.kernel);
    auto& set = *static_cast<VkBindingSetImpl*>(c.bindings);
    if (i > 0) barrier(batch.cmd, false);  // each dispatch sees the writes of the one before
    if (k.pipeline != bound) {
      fn_.vkCmdBindPipeline(batch.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k.pipeline);
      bound = k.pipeline;
    }
    if (!set.sets.empty())
      fn_.vkCmdBindDescriptorSets(batch.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k.layout, 0,
                                  static_cast<std::uint32_t>(set.sets.size()), set.sets.data(), 0, nullptr);
    if (k.push_bytes)
      fn_.vkCmdPushConstants(batch.cmd, k.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, k.push_bytes, c.params.data());
    // Both at the bottom of the pipe: the first is written once everything before this
    // dispatch has finished, the second once the dispatch has, so the times never overlap.
    const auto slot = static_cast<std::uint32_t>(2 * i);
    if (stamps) fn_.vkCmdWriteTimestamp(batch.cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, stamps, slot);
    // The dispatch's label: its kernel's name, in captures and in validation messages about it.
    const InstanceFns& ifn = instance_->fns();
    if (ifn.vkCmdBeginDebugUtilsLabelEXT && !c.kernel->name.empty()) {
      VkDebugUtilsLabelEXT label{VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT};
      label.pLabelName = c.kernel->name.c_str();
      ifn.vkCmdBeginDebugUtilsLabelEXT(batch.cmd, &label);
    }
    fn_.vkCmdDispatch(batch.cmd, c.groups.x, c.groups.y, c.groups.z);
    if (ifn.vkCmdBeginDebugUtilsLabelEXT && !c.kernel->name.empty()) ifn.vkCmdEndDebugUtilsLabelEXT(batch.cmd);
    if (stamps) fn_.vkCmdWriteTimestamp(batch.cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, stamps, slot + 1);
  }
  barrier(batch.cmd, true);  // results become visible to host reads of mapped buffers
  check_vk(fn_.vkEndCommandBuffer(batch.cmd), "vkEndCommandBuffer");
}

BatchTimestamps::~BatchTimestamps() {
  if (pool != VK_NULL_HANDLE && !process_exiting()) fn.vkDestroyQueryPool(device, pool, nullptr);
}

std::shared_ptr<BatchTimestamps> VulkanDevice::begin_timestamps(VkCommandBuffer cmd,
                                                                std::span<const DispatchCommand> commands) {
  auto t = std::make_shared<BatchTimestamps>(fn_, device_);
  VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qi.queryCount = static_cast<std::uint32_t>(2 * commands.size());
  // Timing is a courtesy: a pool the driver cannot make leaves the batch untimed, not failed.
  if (fn_.vkCreateQueryPool(device_, &qi, nullptr, &t->pool) != VK_SUCCESS) {
    t->pool = VK_NULL_HANDLE;
    return nullptr;
  }
  t->kernels.reserve(commands.size());
  for (const DispatchCommand& c : commands) t->kernels.push_back(c.kernel->name);
  // In the command buffer, so each run of a resubmitted batch starts from unwritten slots.
  fn_.vkCmdResetQueryPool(cmd, t->pool, 0, qi.queryCount);
  return t;
}

void VulkanDevice::report_timestamps(const InFlight& flight) noexcept {
  if (flight.timed.empty() || lost()) return;  // a lost device's slots hold nothing worth reading
  const std::uint32_t bits = physical_.timestamp_bits;
  const std::uint64_t mask = bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
  const double period = physical_.properties.limits.timestampPeriod;  // ns per tick
  const auto to_ns = [&](std::uint64_t ticks) {
    return static_cast<std::uint64_t>(static_cast<double>(ticks & mask) * period);
  };
  try {
    std::vector<std::uint64_t> slots;  // (value, availability) pairs
    for (const auto& t : flight.timed) {
      const auto count = static_cast<std::uint32_t>(2 * t->kernels.size());
      slots.assign(2 * std::size_t{count}, 0);
      // VK_NOT_READY is expected where a later run of the same batch has reset the slots.
      const VkResult r = fn_.vkGetQueryPoolResults(device_, t->pool, 0, count, slots.size() * sizeof(std::uint64_t),
                                                   slots.data(), 2 * sizeof(std::uint64_t),
                                                   VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
      if (r != VK_SUCCESS && r != VK_NOT_READY) continue;
      for (std::size_t i = 0; i < t->kernels.size(); ++i) {
        const std::uint64_t* begin = &slots[4 * i];
        const std::uint64_t* end = &slots[4 * i + 2];
        if (begin[1] != 0 && end[1] != 0) report_dispatch_time(t->kernels[i], to_ns(begin[0]), to_ns(end[0]));
      }
    }
  } catch (...) {  // no memory for the slots: these times are lost, the work is not
  }
}

void VulkanDevice::submit(RecordedBatchImpl& recorded, const Deadline& /*deadline*/) {  // queues, never waits
  queue_batch(static_cast<VkBatchImpl&>(recorded));
}

void VulkanDevice::release_batch(VkBatchImpl& b) {
  // Nothing queued runs it any more (core frees a batch after its last run has finished).
  if (b.cmd == VK_NULL_HANDLE || process_exiting()) return;
  fn_.vkResetCommandBuffer(b.cmd, 0);
  try {
    free_cmds_.push_back(b.cmd);
  } catch (...) {  // no room in the free list: the pool frees it with the device
  }
}

}  // namespace vgpu::vulkan
