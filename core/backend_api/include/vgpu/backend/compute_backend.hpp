// SPDX-License-Identifier: Apache-2.0
// vgpu/backend/compute_backend.hpp — one compute API (CUDA, Vulkan, OpenGL, CPU) as the registry sees it.
// Backend-author interface.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "vgpu/backend_status.hpp"
#include "vgpu/device_info.hpp"
#include "vgpu/types.hpp"

namespace vgpu {

class DeviceImpl;

/// One compute API. Backends load their vendor runtime at run time, so a missing driver is a
/// reported reason, never a link error. Thread-safety: implementations make every member safe
/// to call from several threads.
class ComputeBackend {
 public:
  virtual ~ComputeBackend() = default;
  /// Returns which API this backend drives.
  virtual BackendKind kind() const noexcept = 0;
  /// Returns the backend's name (device ids are name:index): by default the name its kind was
  /// made from (BackendKind::named); Runtime refuses a backend whose name and kind disagree.
  virtual std::string name() const { return std::string(to_string(kind())); }
  /// Returns whether it can run here, with the reason when it cannot.
  virtual BackendStatus status() = 0;
  /// Lists the devices this backend can open (empty when unavailable).
  virtual std::vector<DeviceInfo> enumerate() = 0;
  /// Opens device index; throws unavailable or invalid_argument.
  virtual std::unique_ptr<DeviceImpl> open(std::uint32_t index) = 0;
};

}  // namespace vgpu
