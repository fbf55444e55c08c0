// SPDX-License-Identifier: Apache-2.0
// backends/vulkan/vk_device.cpp — device creation and the submission machinery: command
// buffers, fences and serials shared by uploads, readbacks and batches.
#include "vk_device.hpp"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "vgpu/error.hpp"
#include "vgpu/log.hpp"

namespace vgpu::vulkan {

VulkanDevice::VulkanDevice(std::shared_ptr<Instance> instance, const PhysicalDevice& physical,
                           std::shared_ptr<const BackendSettings> settings)
    : DeviceImpl(std::move(settings)), instance_(std::move(instance)), physical_(physical) {
  const InstanceFns& f = instance_->fns();
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = physical_.queue_family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  // Every supported shader feature a user module may need (vk_features.hpp): compile() then
  // only checks a module's capabilities against them, never recreating the device.
  const FeatureChain features(physical_.features);
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = features.head();
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = static_cast<std::uint32_t>(physical_.features.extensions.size());
  dci.ppEnabledExtensionNames = physical_.features.extensions.data();
  check_vk(f.vkCreateDevice(physical_.handle, &dci, nullptr, &device_), "vkCreateDevice");
  load_device(f, device_, fn_);
  if (physical_.features.host_import_alignment)
    host_pointer_properties_ = reinterpret_cast<PFN_vkGetMemoryHostPointerPropertiesEXT>(
        f.vkGetDeviceProcAddr(device_, "vkGetMemoryHostPointerPropertiesEXT"));
  fn_.vkGetDeviceQueue(device_, physical_.queue_family, 0, &queue_);

  // Software and integrated devices share host memory: writing buffers in place beats a
  // staging copy there. Discrete GPUs get device-local memory behind a staging ring.
  host_visible_buffers_ = physical_.info.type != DeviceType::discrete_gpu;
  yield_while_polling_ = physical_.info.type == DeviceType::software;

  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = physical_.queue_family;
  check_vk(fn_.vkCreateCommandPool(device_, &pci, nullptr, &pool_), "vkCreateCommandPool");
  load_pipeline_cache();
}

void VulkanDevice::on_counters_attached() noexcept {
  // The pipeline cache was read from L2 in the constructor, before the counters existed.
  counters().l2_hits.fetch_add(open_l2_hits_, std::memory_order_relaxed);
  counters().l2_rejected.fetch_add(open_l2_rejected_, std::memory_order_relaxed);
  open_l2_hits_ = open_l2_rejected_ = 0;
}

bool VulkanDevice::release() noexcept {
  if (process_exiting()) return true;  // the destructor leaves everything to the OS
  return settle_work();
}

VulkanDevice::~VulkanDevice() {
  // Leave every Vulkan object to the OS at exit, or to the abandoned device (release()
  // normally settled already).
  if (process_exiting() || !settle_work()) {
    drop_timestamps(/*destroy=*/false);  // the abandoned device keeps its query pools too
    return;
  }
  drop_timestamps(/*destroy=*/true);   // before the device they were made on goes
  if (!lost()) save_pipeline_cache();  // a lost device's driver state is not worth keeping
  destroy_buffer(staging_);
  destroy_buffer(readback_);
  for (auto& [key, l] : layouts_) {
    fn_.vkDestroyPipelineLayout(device_, l.pipeline_layout, nullptr);
    for (VkDescriptorSetLayout s : l.set_layouts) fn_.vkDestroyDescriptorSetLayout(device_, s, nullptr);
  }
  for (VkDescriptorPool p : descriptor_pools_) fn_.vkDestroyDescriptorPool(device_, p, nullptr);
  for (VkFence fence : free_fences_) fn_.vkDestroyFence(device_, fence, nullptr);
  if (pipeline_cache_) fn_.vkDestroyPipelineCache(device_, pipeline_cache_, nullptr);
  fn_.vkDestroyCommandPool(device_, pool_, nullptr);
  fn_.vkDestroyDevice(device_, nullptr);
}

void VulkanDevice::drop_timestamps(bool destroy) noexcept {
  auto drop = [&](std::shared_ptr<BatchTimestamps>& t) {
    if (t && !destroy) t->pool = VK_NULL_HANDLE;  // leaked with the device, never destroyed under it
    t.reset();
  };
  for (InFlight& f : in_flight_)
    for (auto& t : f.timed) drop(t);
  for (PendingCmd& p : pending_) drop(p.timestamps);
}

void VulkanDevice::barrier(VkCommandBuffer cmd, bool to_host) const {
  // One global barrier orders every earlier shader/transfer write before later accesses;
  // buffers are few and large, so finer-grained barriers would buy nothing measurable.
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT;
  VkPipelineStageFlags dst = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  if (to_host) {
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    dst = VK_PIPELINE_STAGE_HOST_BIT;
  }
  fn_.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, dst, 0, 1, &mb,
                           0, nullptr, 0, nullptr);
}

VkCommandBuffer VulkanDevice::take_cmd() {
  if (!free_cmds_.empty()) {
    VkCommandBuffer cmd = free_cmds_.back();
    free_cmds_.pop_back();
    return cmd;
  }
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  check_vk(fn_.vkAllocateCommandBuffers(device_, &ai, &cmd), "vkAllocateCommandBuffers");
  return cmd;
}

VkCommandBuffer VulkanDevice::transient_cmd() {
  VkCommandBuffer cmd = take_cmd();
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check_vk(fn_.vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
  barrier(cmd, false);
  return cmd;
}

VkCommandBuffer VulkanDevice::pending_upload() {
  if (pending_upload_ == VK_NULL_HANDLE) pending_upload_ = transient_cmd();
  return pending_upload_;
}

void VulkanDevice::close_upload() {
  if (pending_upload_ == VK_NULL_HANDLE) return;
  check_vk(fn_.vkEndCommandBuffer(pending_upload_), "vkEndCommandBuffer");
  pending_.push_back(PendingCmd{pending_upload_, true});
  pending_upload_ = VK_NULL_HANDLE;
}

void VulkanDevice::queue_batch(VkBatchImpl& batch) {
  close_upload();  // uploads recorded before this submit must run before it
  const VkCommandBuffer cmd = batch_cmd(batch);
  pending_.push_back(PendingCmd{cmd, false, batch.timestamps});
  // Batches coalesce into one vkQueueSubmit while the queue is busy; with fewer than two
  // submissions in flight this one goes at once, so the GPU never idles while the caller
  // records more (a chain of array ops, each op its own batch: waiting for the closing sync
  // left the GPU idle for all their recording, 1.23x the kernels' time for 10 1024² matmuls
  // on the H200). A caller that never syncs still gets its work started (64 pending at most).
  if (pending_.size() >= 64) {
    flush();
    return;
  }
  (void)completed_serial();  // retires what has finished (fence polls, no wait)
  if (in_flight_.size() < 2) flush();
}

std::uint64_t VulkanDevice::flush(VkCommandBuffer extra, bool extra_is_transient) {
  close_upload();
  if (extra != VK_NULL_HANDLE) pending_.push_back(PendingCmd{extra, extra_is_transient});
  if (pending_.empty()) return 0;
  InFlight flight{next_serial_++, VK_NULL_HANDLE, {}};
  // A retired submission's recycle list comes back here (retire_front), so a steady round
  // trip allocates no vector per call.
  if (!spare_recycle_.empty()) {
    flight.recycle = std::move(spare_recycle_.back());
    spare_recycle_.pop_back();
    flight.recycle.clear();
  }
  // Command buffers of re-recorded batches: free once this submission (after all before it) ran.
  flight.recycle.insert(flight.recycle.end(), retired_cmds_.begin(), retired_cmds_.end());
  retired_cmds_.clear();
  std::vector<VkCommandBuffer>& cmds = submit_scratch_;
  cmds.clear();
  for (const PendingCmd& p : pending_) {
    cmds.push_back(p.cmd);
    if (p.transient) flight.recycle.push_back(p.cmd);
    if (p.timestamps) flight.timed.push_back(p.timestamps);
  }
  pending_.clear();
  if (!free_fences_.empty()) {
    flight.fence = free_fences_.back();
    free_fences_.pop_back();
  } else {
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    check_vk(fn_.vkCreateFence(device_, &fci, nullptr, &flight.fence), "vkCreateFence");
  }
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = static_cast<std::uint32_t>(cmds.size());
  si.pCommandBuffers = cmds.data();
  const VkResult r = fn_.vkQueueSubmit(queue_, 1, &si, flight.fence);
  if (r != VK_SUCCESS) {
    if (r == VK_ERROR_DEVICE_LOST) {
      // The command buffers and the fence may be in any state: recycle none of them (they go
      // with the pool and the device).
      fail_device(r, "vkQueueSubmit");
    }
    free_fences_.push_back(flight.fence);
    for (VkCommandBuffer c : flight.recycle) {
      fn_.vkResetCommandBuffer(c, 0);
      free_cmds_.push_back(c);
    }
    fail_vk(r, "vkQueueSubmit");
  }
  in_flight_.push_back(std::move(flight));
  return in_flight_.back().serial;
}

bool VulkanDevice::try_wait_serial(std::uint64_t serial, const Deadline& deadline) {
  std::size_t n = 0;
  std::vector<VkFence>& fences = wait_scratch_;  // reused: a steady wait allocates nothing
  fences.clear();
  while (n < in_flight_.size() && in_flight_[n].serial <= serial) fences.push_back(in_flight_[n++].fence);
  // The test hook: the wait reports VK_ERROR_DEVICE_LOST as a driver does after a GPU reset,
  // and the path below runs as for a real loss (the work still queued is abandoned). Whether or
  // not a submission is still in flight: work a poll (completed_serial) has already retired
  // must not let the wait the test armed pass unnoticed (as CUDA's try_sync, it strikes first).
  if (take_injected_loss()) fail_device(VK_ERROR_DEVICE_LOST, "vkWaitForFences (simulated loss)");
  if (n > 0) {
    // Short GPU work finishes in microseconds, but a blocking fence wait can take tens of
    // microseconds to wake up: poll the newest fence briefly before blocking on all of them.
    // A software device (lavapipe) runs the work on this host's cores, on its submit and
    // compute threads: a tight poll takes a core from them (and the fence's mutex, which
    // they need to signal it), so there each poll yields. Measured on lavapipe (2 cores,
    // 256-float multiply round trip): 54-61 us with the tight poll, 31-34 us yielding.
    const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(500);
    VkResult status = VK_NOT_READY;
    while ((status = fn_.vkGetFenceStatus(device_, fences.back())) == VK_NOT_READY &&
           std::chrono::steady_clock::now() < spin_until) {
      if (yield_while_polling_) std::this_thread::yield();
    }
    // Bounded: a runaway kernel must not block the caller forever (VK_TIMEOUT once it passes;
    // work that has finished by then is success, however late the deadline).
    const VkResult r = status == VK_ERROR_DEVICE_LOST
                           ? status
                           : fn_.vkWaitForFences(device_, static_cast<std::uint32_t>(n), fences.data(), VK_TRUE,
                                                 deadline.remaining_ns());
    if (r == VK_TIMEOUT) return false;
    if (r == VK_ERROR_DEVICE_LOST) {
      // A lost device's waits return in finite time and nothing of its work runs on (the
      // spec's "Lost Device"): once the loss is known, its work counts as over, so release()
      // can free its objects instead of leaking them.
      if (!lost()) fail_device(r, "vkWaitForFences");
      retire_front(n);
      return true;
    }
    if (r != VK_SUCCESS) fail_vk(r, "vkWaitForFences");
    retire_front(n);
  }
  // The staging ring can restart once nothing queued or pending still reads from it.
  if (idle()) staging_head_ = 0;
  return true;
}

void VulkanDevice::retire_front(std::size_t n) {
  if (n == 0) return;
  // Room first, so that nothing below throws halfway through (a retry would recycle twice).
  std::size_t recycled = 0;
  for (std::size_t i = 0; i < n; ++i) recycled += in_flight_[i].recycle.size();
  std::vector<VkFence>& fences = retire_scratch_;  // not wait_scratch_: try_wait_serial still holds it
  fences.clear();
  fences.reserve(n);
  free_fences_.reserve(free_fences_.size() + n);
  free_cmds_.reserve(free_cmds_.size() + recycled);
  spare_recycle_.reserve(spare_recycle_.size() + n);
  for (std::size_t i = 0; i < n; ++i) {
    fences.push_back(in_flight_[i].fence);
    for (VkCommandBuffer c : in_flight_[i].recycle) {
      fn_.vkResetCommandBuffer(c, 0);
      free_cmds_.push_back(c);
    }
    completed_serial_ = in_flight_[i].serial;
    report_timestamps(in_flight_[i]);
    spare_recycle_.push_back(std::move(in_flight_[i].recycle));  // room reserved above: no throw
  }
  fn_.vkResetFences(device_, static_cast<std::uint32_t>(n), fences.data());
  free_fences_.insert(free_fences_.end(), fences.begin(), fences.end());
  in_flight_.erase(in_flight_.begin(), in_flight_.begin() + static_cast<std::ptrdiff_t>(n));
}

std::uint64_t VulkanDevice::submitted_serial() noexcept {
  // Recorded work not yet flushed goes to the queue with the next serial.
  return idle_pending() ? next_serial_ - 1 : next_serial_;
}

std::uint64_t VulkanDevice::completed_serial() noexcept {
  std::size_t n = 0;
  // Submissions complete in order; a fence that is not signalled (or errs: a lost device's
  // work may still run) ends the scan.
  while (n < in_flight_.size() && fn_.vkGetFenceStatus(device_, in_flight_[n].fence) == VK_SUCCESS) ++n;
  try {
    retire_front(n);
  } catch (...) {  // a full free list (no memory): keep them in flight, polled again later
    return completed_serial_;
  }
  // Nothing in flight: every flushed serial has run (or never reached the queue: a failed submit).
  if (in_flight_.empty()) completed_serial_ = next_serial_ - 1;
  if (idle()) staging_head_ = 0;
  return completed_serial_;
}

void VulkanDevice::fail_device(VkResult r, const char* call) {
  mark_lost(std::string(call) + " returned " + result_name(r));
  fail_vk(r, call);
}

void VulkanDevice::wait_serial(std::uint64_t serial, const Deadline& deadline, const char* what) {
  if (try_wait_serial(serial, deadline)) return;
  // The queue still runs the work: nothing waited for may be reused or freed, so the device
  // takes no more calls.
  mark_lost(std::string("a wait for its queue ran past the ") + std::to_string(deadline.limit().count()) +
            " ms limit while " + what + ", with the work still running");
  fail_timeout(physical_.info, deadline, what, true);
}

void VulkanDevice::finish(const Deadline& deadline, const char* what) {
  flush();
  wait_serial(next_serial_, deadline, what);
}

bool VulkanDevice::settle_work() noexcept {
  if (process_exiting()) return false;
  return settle("Vulkan", "buffers, pipelines and queue", [this](const Deadline& deadline) {
    if (lost()) {
      // Recorded work that never reached the queue never will: only what runs is waited for.
      pending_.clear();
      pending_upload_ = VK_NULL_HANDLE;  // its command buffer goes with the pool
    } else {
      flush();
    }
    return try_wait_serial(UINT64_MAX, deadline);
  });
}

bool VulkanDevice::idle_pending() const { return pending_.empty() && pending_upload_ == VK_NULL_HANDLE; }

bool VulkanDevice::idle() const { return in_flight_.empty() && idle_pending(); }

void VulkanDevice::synchronize(const Deadline& deadline) {
  finish(deadline, "waiting for submitted work (synchronize)");
}

}  // namespace vgpu::vulkan
