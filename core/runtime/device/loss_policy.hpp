// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/loss_policy.hpp — vgpu's one policy for a device that fails, in the
// device layer, which every caller above applies as written here:
//
//  1. Recover. A lost device recovers in place at its next call (DeviceCore::recover,
//     device_recovery.cpp): kernels, buffers, binding sets and batches come back; a user
//     buffer's contents do not (they read as lost, never stale).
//  2. Retry once. A call whose inputs are all on the host (a PersistentKernel call, hence
//     KernelDatabase::call and Cache::matmul; a queue run) runs once more after device_lost
//     (retry_once_after_loss). A timeout is never retried: the limit is the caller's.
//  3. Give way. An error that still reaches the caller and says the device failed
//     (gives_way: compile_error, out_of_memory, device_lost, unavailable, not_supported) moves
//     the work to another device: KernelDatabase::call demotes the device for that op and size
//     class; a device set's spread re-spreads the failed device's share over the others. Any
//     other error (a bad argument, a timeout) is the caller's and reaches it.
//  4. Relapse. A device that recovered is not demoted, unless it is lost again within
//     DeviceCore::kRelapseWindow of recovering (RelapseWatch): then the call's own results
//     stand and the next calls run elsewhere, as in 3.
#pragma once

#include <cstdint>

#include "device_core.hpp"
#include "vgpu/error.hpp"

namespace vgpu::detail {

/// Step 2: runs f, and runs it once more when it throws device_lost (the device recovers in
/// place at its next call, so a call whose inputs are all on the host gives its results as if
/// nothing happened). A second device_lost, and every other error, reaches the caller.
template <class F>
auto retry_once_after_loss(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    if (e.category() != ErrorCategory::device_lost) throw;
  }
  return f();
}

/// Step 3: whether e says the device failed, so the work gives way to another device; a
/// timeout or a bad argument is the caller's and reaches it.
inline bool gives_way(const Error& e) noexcept {
  switch (e.category()) {  // every category, so that a new one must be placed (-Wswitch)
    case ErrorCategory::compile_error:
    case ErrorCategory::out_of_memory:
    case ErrorCategory::device_lost:
    case ErrorCategory::unavailable:
    case ErrorCategory::not_supported:
      return true;
    case ErrorCategory::invalid_argument:
    case ErrorCategory::io:
    case ErrorCategory::internal:
    case ErrorCategory::timeout:
      return false;
  }
  return false;
}

/// Step 4: watches one call on a device; relapsed() says whether the device relapsed (was lost
/// again within kRelapseWindow of its last recovery) since the watch began. Thread-safety: a
/// value for one call; the device's count it reads is atomic.
class RelapseWatch {
 public:
  /// Starts watching core (which must outlive the watch).
  explicit RelapseWatch(const DeviceCore& core) noexcept : core_(core), before_(core.relapses()) {}
  /// Returns whether core relapsed since the watch began.
  bool relapsed() const noexcept { return core_.relapses() > before_; }

 private:
  const DeviceCore& core_;
  std::uint64_t before_;
};

}  // namespace vgpu::detail
