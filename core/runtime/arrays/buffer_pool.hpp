// SPDX-License-Identifier: Apache-2.0
// core/runtime/arrays/buffer_pool.hpp — buffers of dropped arrays kept for the next array of the
// same size on the device, so a chain of ops allocates nothing in its steady state (cuMemAlloc
// and cuMemFree, vkAllocateMemory, a zeroed host allocation cost more than the op at small sizes).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "prepared_ops.hpp"
#include "vgpu/device.hpp"

namespace vgpu::detail {

/// Free buffers of one device by exact size, bounded. Reuse is safe without waiting: every call
/// on a device takes effect in call order, so work submitted on a buffer's earlier array
/// finishes (or is ordered) before the new array's. Thread-safety: safe from any thread (a
/// mutex, a leaf, guards it).
class BufferPool {
 public:
  /// Bytes of free buffers a device's pool keeps at most: 256 MiB (the output of a chain's
  /// steady state is a few arrays; a large one beyond the bound is freed as before).
  static constexpr std::uint64_t kMaxBytes = std::uint64_t{256} << 20;
  /// Free buffers of one size it keeps at most.
  static constexpr std::size_t kMaxPerSize = 8;

  /// Returns a free buffer of exactly bytes, or an empty handle.
  Buffer take(std::uint64_t bytes);
  /// Keeps buffer for a later take(), when no other handle refers to it and the bounds allow;
  /// otherwise lets it go (freed once its work has finished). Never throws.
  void give(const Device& device, Buffer buffer) noexcept;

 private:
  std::mutex mutex_;
  std::map<std::uint64_t, std::vector<Buffer>> free_;
  std::uint64_t held_ = 0;
};

/// What the array layer keeps per device (a DeviceCore attachment): prepared ops and the pool.
struct DeviceArrays {
  PreparedOps ops;
  BufferPool pool;
};

/// Returns device's DeviceArrays.
DeviceArrays& device_arrays(const Device& device);

/// A pooled array buffer: given back to its device's pool when the last array over it goes.
struct PooledStorage {
  Device device;
  Buffer buffer;
  PooledStorage(Device d, Buffer b) : device(std::move(d)), buffer(std::move(b)) {}
  PooledStorage(const PooledStorage&) = delete;
  PooledStorage& operator=(const PooledStorage&) = delete;
  ~PooledStorage() { device_arrays(device).pool.give(device, std::move(buffer)); }
};

}  // namespace vgpu::detail
