// SPDX-License-Identifier: Apache-2.0
// backends/vulkan/vk_memory.cpp — buffers, the staging ring, uploads, readbacks and copies.
#include <cstdio>
#include <cstring>
#include <string>

#include "vgpu/error.hpp"
#include "vk_device.hpp"

namespace vgpu::vulkan {
namespace {

// Uniform too: a user shader may bind any buffer as a UBO (the validation layer reports
// VUID-VkWriteDescriptorSet-descriptorType-00330 for a buffer created without that usage).
constexpr VkBufferUsageFlags kStorageUsage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT |
                                             VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
constexpr VkMemoryPropertyFlags kHostFlags = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;

std::uint64_t round_up(std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

VkBufferImpl::~VkBufferImpl() { device_.destroy_buffer(alloc); }

std::uint32_t VulkanDevice::memory_type(std::uint32_t bits, VkMemoryPropertyFlags want) const {
  const auto& mp = physical_.memory;
  for (std::uint32_t i = 0; i < mp.memoryTypeCount; ++i)
    if ((bits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) return i;
  return UINT32_MAX;
}

Allocation VulkanDevice::allocate(std::uint64_t bytes, MemoryUse use, VkBufferUsageFlags usage,
                                  const std::string& label) {
  const bool host_visible = use != MemoryUse::device;
  Allocation a;
  a.size = bytes;
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = bytes;
  bci.usage = usage;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check_vk(fn_.vkCreateBuffer(device_, &bci, nullptr, &a.buffer), "vkCreateBuffer");
  name_object(VK_OBJECT_TYPE_BUFFER, reinterpret_cast<std::uint64_t>(a.buffer), label);
  VkMemoryRequirements req;
  fn_.vkGetBufferMemoryRequirements(device_, a.buffer, &req);
  std::uint32_t type = UINT32_MAX;
  if (use == MemoryUse::readback || use == MemoryUse::shared) {
    // The host reads these: it must be cached memory, or every read crawls through an
    // uncached mapping (a discrete GPU's BAR window reads at a few MB/s). Shared buffers of
    // integrated/software devices also want device-local when it is cached too.
    type = memory_type(req.memoryTypeBits, kHostFlags | VK_MEMORY_PROPERTY_HOST_CACHED_BIT |
                                               (use == MemoryUse::shared ? VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT : 0));
    if (type == UINT32_MAX) type = memory_type(req.memoryTypeBits, kHostFlags | VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  }
  if (use == MemoryUse::shared && type == UINT32_MAX)
    type = memory_type(req.memoryTypeBits, kHostFlags | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  if (host_visible && type == UINT32_MAX) {
    // Upload staging is only written by the host: write-combined memory is fine.
    type = memory_type(req.memoryTypeBits, kHostFlags);
  } else if (!host_visible) {
    type = memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  }
  if (type == UINT32_MAX) {
    fn_.vkDestroyBuffer(device_, a.buffer, nullptr);
    fail(ErrorCategory::not_supported, "Vulkan device '" + physical_.info.name + "' has no suitable memory type.",
         "use another backend (VGPU_BACKEND=opengl,cpu) and report the device.");
  }
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = type;
  if (const VkResult r = fn_.vkAllocateMemory(device_, &mai, nullptr, &a.memory); r != VK_SUCCESS) {
    fn_.vkDestroyBuffer(device_, a.buffer, nullptr);
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
      fail(ErrorCategory::out_of_memory,
           "Vulkan device '" + physical_.info.name + "' could not allocate " + std::to_string(bytes) + " bytes (" +
               result_name(r) + ").",
           "free other buffers, use smaller ones, or pick a device with more memory.");
    fail_vk(r, "vkAllocateMemory");
  }
  check_vk(fn_.vkBindBufferMemory(device_, a.buffer, a.memory, 0), "vkBindBufferMemory");
  if (host_visible) check_vk(fn_.vkMapMemory(device_, a.memory, 0, VK_WHOLE_SIZE, 0, &a.mapped), "vkMapMemory");
  return a;
}

void VulkanDevice::destroy_buffer(Allocation& a) {
  // No queued work uses it any more: core frees a buffer only after its last use has run.
  if (a.buffer == VK_NULL_HANDLE || process_exiting()) return;
  if (a.mapped && !a.imported) fn_.vkUnmapMemory(device_, a.memory);
  fn_.vkDestroyBuffer(device_, a.buffer, nullptr);
  fn_.vkFreeMemory(device_, a.memory, nullptr);  // an import's host memory stays the caller's
  a = Allocation{};
}

std::unique_ptr<BufferImpl> VulkanDevice::create_buffer(std::uint64_t bytes) {
  // Storage buffers are padded to 16 bytes so vector loads at the tail stay in bounds.
  Allocation a =
      allocate(round_up(bytes, 16), host_visible_buffers_ ? MemoryUse::shared : MemoryUse::device, kStorageUsage,
               "vgpu buffer (" + std::to_string(bytes) + " bytes)");  // until Device::set_label names it
  if (a.mapped) std::memset(a.mapped, 0, a.size);
  auto buffer = std::make_unique<VkBufferImpl>(*this, a);
  if (!a.mapped) {
    // Zero device-local memory with a queued fill so no buffer ever exposes stale data.
    VkCommandBuffer cmd = pending_upload();
    fn_.vkCmdFillBuffer(cmd, a.buffer, 0, VK_WHOLE_SIZE, 0);
    barrier(cmd, false);  // a later upload into this buffer must land after the fill
  }
  return buffer;
}

// Host memory in place (Array::from_external with host memory), where the driver offers
// VK_EXT_external_memory_host: the whole pages around the caller's bytes are imported as one
// allocation (the driver takes host pointers and sizes in units of minImportedHostPointerAlignment,
// usually a page, and numpy's data rarely starts on one); the buffer's data starts inside it
// (Allocation::base), which a storage binding's offset must allow. Kernels then read and write
// the caller's memory itself: on a discrete GPU over the bus, so only arrays import (the
// PersistentKernel path keeps staging: imports_host() stays false), and on lavapipe it is the
// memory the driver would have copied into.
std::unique_ptr<BufferImpl> VulkanDevice::import_host(void* data, std::uint64_t bytes) {
  const std::uint64_t page = physical_.features.host_import_alignment;
  if (page == 0 || !host_pointer_properties_) return nullptr;
  const auto address = reinterpret_cast<std::uintptr_t>(data);
  const std::uint64_t base = address % page;
  const std::uint64_t storage_align =
      std::max<VkDeviceSize>(1, physical_.properties.limits.minStorageBufferOffsetAlignment);
  const std::string where = std::to_string(bytes) + " bytes of host memory at 0x" + [&] {
    char hex[20];
    std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(address));
    return std::string(hex);
  }();
  if (base % storage_align != 0)
    fail(ErrorCategory::not_supported,
         "Vulkan device '" + physical_.info.name + "' cannot bind " + where + " in place: buffers must start on a " +
             std::to_string(storage_align) + "-byte boundary (minStorageBufferOffsetAlignment), and it is " +
             std::to_string(base % storage_align) + " bytes past one.",
         "copy the data in (Array::from_host, or asarray without copy=False), or allocate it aligned to " +
             std::to_string(storage_align) + " bytes.");
  void* start = reinterpret_cast<void*>(address - base);
  const std::uint64_t span = round_up(base + bytes, page);
  VkMemoryHostPointerPropertiesEXT props{VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
  if (const VkResult r =
          host_pointer_properties_(device_, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, start, &props);
      r != VK_SUCCESS || props.memoryTypeBits == 0)
    fail(ErrorCategory::not_supported,
         "Vulkan device '" + physical_.info.name + "' cannot import " + where +
             " (vkGetMemoryHostPointerPropertiesEXT: " + (r != VK_SUCCESS ? result_name(r) : "no memory type") + ").",
         "copy the data in (Array::from_host, or asarray without copy=False); memory the driver cannot import is "
         "usually a file mapping or device memory, not ordinary heap memory.");
  Allocation a;
  a.size = bytes;
  a.base = base;
  a.imported = true;
  a.mapped = start;
  VkExternalMemoryBufferCreateInfo external{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO};
  external.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.pNext = &external;
  bci.size = span;
  bci.usage = kStorageUsage;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check_vk(fn_.vkCreateBuffer(device_, &bci, nullptr, &a.buffer), "vkCreateBuffer");
  VkMemoryRequirements req;
  fn_.vkGetBufferMemoryRequirements(device_, a.buffer, &req);
  const std::uint32_t bits = req.memoryTypeBits & props.memoryTypeBits;
  std::uint32_t type = memory_type(bits, kHostFlags | VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  if (type == UINT32_MAX) type = memory_type(bits, 0);
  if (type == UINT32_MAX || req.size > span) {
    fn_.vkDestroyBuffer(device_, a.buffer, nullptr);
    fail(ErrorCategory::not_supported,
         "Vulkan device '" + physical_.info.name + "' has no buffer memory type that can import " + where + ".",
         "copy the data in (Array::from_host, or asarray without copy=False).");
  }
  VkImportMemoryHostPointerInfoEXT import{VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT};
  import.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  import.pHostPointer = start;
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.pNext = &import;
  mai.allocationSize = span;
  mai.memoryTypeIndex = type;
  if (const VkResult r = fn_.vkAllocateMemory(device_, &mai, nullptr, &a.memory); r != VK_SUCCESS) {
    fn_.vkDestroyBuffer(device_, a.buffer, nullptr);
    fail(ErrorCategory::not_supported,
         "Vulkan device '" + physical_.info.name + "' could not import " + where +
             " (vkAllocateMemory: " + result_name(r) + ").",
         "copy the data in (Array::from_host, or asarray without copy=False).");
  }
  if (const VkResult r = fn_.vkBindBufferMemory(device_, a.buffer, a.memory, 0); r != VK_SUCCESS) {
    fn_.vkDestroyBuffer(device_, a.buffer, nullptr);
    fn_.vkFreeMemory(device_, a.memory, nullptr);
    fail_vk(r, "vkBindBufferMemory");
  }
  return std::make_unique<VkBufferImpl>(*this, a);
}

BufferAddress VulkanDevice::address(BufferImpl& buffer) {
  const auto& a = static_cast<VkBufferImpl&>(buffer).alloc;
  if (!a.imported) return {};
  return BufferAddress{a.host_at(0), BufferAddress::Space::host};
}

void VulkanDevice::ensure_capacity(Allocation& host, std::uint64_t bytes, MemoryUse use, const Deadline& deadline) {
  if (host.size >= bytes) return;
  finish(deadline, "waiting for queued copies before growing the staging memory");
  const std::uint64_t size = std::max<std::uint64_t>(round_up(bytes, 1 << 20), host.size * 2);
  Allocation old = host;
  host = allocate(size, use, VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                  use == MemoryUse::readback ? "vgpu readback" : "vgpu staging");
  if (old.buffer) {
    if (old.mapped) fn_.vkUnmapMemory(device_, old.memory);
    fn_.vkDestroyBuffer(device_, old.buffer, nullptr);
    fn_.vkFreeMemory(device_, old.memory, nullptr);
  }
}

void VulkanDevice::write(BufferImpl& buffer, std::uint64_t offset, const void* data, std::uint64_t bytes,
                         const Deadline& deadline) {
  auto& dst = static_cast<VkBufferImpl&>(buffer).alloc;
  if (dst.mapped) {
    // Earlier queued work may read or write these bytes: wait for it before touching them.
    if (!idle()) finish(deadline, "waiting for earlier work before writing a buffer");
    std::memcpy(dst.host_at(offset), data, bytes);
    return;
  }
  if (staging_head_ + bytes > staging_.size) {
    finish(deadline, "waiting for queued uploads to free the staging ring");
    ensure_capacity(staging_, bytes, MemoryUse::upload, deadline);
  }
  std::memcpy(static_cast<char*>(staging_.mapped) + staging_head_, data, bytes);
  const VkBufferCopy region{staging_head_, dst.base + offset, bytes};
  VkCommandBuffer cmd = pending_upload();
  fn_.vkCmdCopyBuffer(cmd, staging_.buffer, dst.buffer, 1, &region);
  barrier(cmd, false);  // two uploads to one buffer before a submit must land in call order
  staging_head_ = round_up(staging_head_ + bytes, 16);
}

void VulkanDevice::read(BufferImpl& buffer, std::uint64_t offset, void* out, std::uint64_t bytes,
                        const Deadline& deadline) {
  const HostReadOp op{&buffer, offset, out, bytes};
  read_back({&op, 1}, deadline, "waiting for submitted work to read a buffer");
}

std::uint64_t VulkanDevice::readback_bytes(std::span<const HostReadOp> reads) {
  std::uint64_t staged = 0;
  for (const HostReadOp& r : reads)
    if (!static_cast<VkBufferImpl*>(r.buffer)->alloc.mapped) staged += round_up(r.bytes, 16);
  return staged;
}

void VulkanDevice::read_back(std::span<const HostReadOp> reads, const Deadline& deadline, const char* what) {
  // Mapped memory is read where it is once the work has run; the rest is copied into the
  // readback buffer by one command buffer, queued after the recorded uploads and batches, so a
  // steady call is one submit and one wait.
  if (const std::uint64_t staged = readback_bytes(reads); readback_.size < staged)
    ensure_capacity(readback_, staged, MemoryUse::readback, deadline);
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  std::uint64_t at = 0;
  for (const HostReadOp& r : reads) {
    const Allocation& src = static_cast<VkBufferImpl*>(r.buffer)->alloc;
    if (src.mapped) continue;
    if (cmd == VK_NULL_HANDLE) cmd = transient_cmd();
    const VkBufferCopy region{src.base + r.offset, at, r.bytes};
    fn_.vkCmdCopyBuffer(cmd, src.buffer, readback_.buffer, 1, &region);
    at += round_up(r.bytes, 16);
  }
  if (cmd != VK_NULL_HANDLE) {
    barrier(cmd, true);
    check_vk(fn_.vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
  }
  flush(cmd, true);
  wait_serial(next_serial_, deadline, what);
  at = 0;
  for (const HostReadOp& r : reads) {
    const Allocation& src = static_cast<VkBufferImpl*>(r.buffer)->alloc;
    if (src.mapped) {
      std::memcpy(r.out, src.host_at(r.offset), r.bytes);
    } else {
      std::memcpy(r.out, static_cast<const char*>(readback_.mapped) + at, r.bytes);
      at += round_up(r.bytes, 16);
    }
  }
}

void VulkanDevice::round_trip(std::span<const HostWriteOp> writes, RecordedBatchImpl* recorded,
                              std::span<const HostReadOp> reads, const Deadline& deadline) {
  // The separate calls would submit twice on a discrete GPU: the batch goes to the queue at
  // once while it is idle (queue_batch), and the readback after it. Here the uploads, the batch
  // and every readback copy are one submission, waited for once.
  if (reads.empty()) {  // nothing to wait for: queued as the separate calls queue it
    DeviceImpl::round_trip(writes, recorded, reads, deadline);
    return;
  }
  // Grown before anything is recorded: growing waits for (and so submits) the queued work.
  if (const std::uint64_t staged = readback_bytes(reads); readback_.size < staged)
    ensure_capacity(readback_, staged, MemoryUse::readback, deadline);
  for (const HostWriteOp& w : writes) write(*w.buffer, w.offset, w.data, w.bytes, deadline);
  if (recorded) {
    close_upload();  // the uploads run before the batch
    auto* batch = static_cast<VkBatchImpl*>(recorded);
    const VkCommandBuffer cmd = batch_cmd(*batch);
    pending_.push_back(PendingCmd{cmd, false, batch->timestamps});
  }
  read_back(reads, deadline, "waiting for a round trip's work");
}

void VulkanDevice::copy(BufferImpl& src, std::uint64_t src_offset, BufferImpl& dst, std::uint64_t dst_offset,
                        std::uint64_t bytes, const Deadline& /*deadline*/) {  // queued, never waits
  auto& s = static_cast<VkBufferImpl&>(src).alloc;
  auto& d = static_cast<VkBufferImpl&>(dst).alloc;
  VkCommandBuffer cmd = transient_cmd();
  const VkBufferCopy region{s.base + src_offset, d.base + dst_offset, bytes};
  fn_.vkCmdCopyBuffer(cmd, s.buffer, d.buffer, 1, &region);
  check_vk(fn_.vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
  flush(cmd, true);
}

}  // namespace vgpu::vulkan
