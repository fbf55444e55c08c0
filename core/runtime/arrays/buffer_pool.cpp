// SPDX-License-Identifier: Apache-2.0
// core/runtime/arrays/buffer_pool.cpp — dropped arrays' buffers kept for the next array of their size.
#include "buffer_pool.hpp"

#include "device_core.hpp"

namespace vgpu::detail {

Buffer BufferPool::take(std::uint64_t bytes) {
  std::lock_guard lock(mutex_);
  const auto it = free_.find(bytes);
  if (it == free_.end() || it->second.empty()) return Buffer();
  Buffer b = std::move(it->second.back());
  it->second.pop_back();
  held_ -= bytes;
  return b;
}

void BufferPool::give(const Device& device, Buffer buffer) noexcept {
  if (!buffer) return;
  // A handle kept elsewhere (Array::buffer() copied by the caller, a binding set not yet
  // destroyed) would see the next array's data: such a buffer is not reused.
  if (!DeviceAccess::core(device).sole_handle(buffer)) return;
  const std::uint64_t bytes = buffer.size();
  Buffer dropped;  // freed outside the lock (its destruction retires it to the device)
  {
    std::lock_guard lock(mutex_);
    try {
      std::vector<Buffer>& same = free_[bytes];
      if (held_ + bytes > kMaxBytes || same.size() >= kMaxPerSize) {
        dropped = std::move(buffer);
      } else {
        same.push_back(std::move(buffer));
        held_ += bytes;
      }
    } catch (...) {  // no memory to remember it: it is simply freed
      dropped = std::move(buffer);
    }
  }
}

DeviceArrays& device_arrays(const Device& device) { return DeviceAccess::core(device).attachment<DeviceArrays>(); }

}  // namespace vgpu::detail
