// SPDX-License-Identifier: Apache-2.0
// vgpu/dispatch_time.hpp — one dispatch's start and end as the device's own timer measured them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace vgpu {

/// How many dispatch times a device keeps (Device::dispatch_times); older ones go first.
inline constexpr std::size_t kDispatchTimesKept = 4096;

/// When one finished dispatch ran, read from the device API's timers (Vulkan timestamp queries,
/// CUDA events, OpenGL GL_TIMESTAMP queries; the steady clock on the CPU). Times are nanoseconds
/// on the device's clock: they order and measure that device's dispatches, and are not
/// comparable with the host's clock or another device's. A plain value.
struct DispatchTime {
  std::string kernel;          ///< the kernel's name (KernelSource::name)
  std::uint64_t begin_ns = 0;  ///< when the dispatch started, on the device's clock
  std::uint64_t end_ns = 0;    ///< when it had finished, on the same clock (>= begin_ns)
  /// Returns end_ns - begin_ns: how long the dispatch ran on the device.
  std::uint64_t duration_ns() const noexcept { return end_ns - begin_ns; }
};

}  // namespace vgpu
