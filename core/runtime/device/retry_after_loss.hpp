// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/retry_after_loss.hpp — the one retry of a call whose inputs are all on the host.
#pragma once

#include "vgpu/error.hpp"

namespace vgpu::detail {

/// Runs f, and runs it once more when it throws device_lost: the device recovers in place at its
/// next call, so a call whose inputs are all on the host (a PersistentKernel call, a queue run)
/// gives its results as if nothing happened. A second device_lost, and every other error (a
/// timeout is the caller's limit), reaches the caller.
template <class F>
auto retry_once_after_loss(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    if (e.category() != ErrorCategory::device_lost) throw;
  }
  return f();
}

}  // namespace vgpu::detail
