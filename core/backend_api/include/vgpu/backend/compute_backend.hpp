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
class OpTuner;

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
  /// Returns how this backend runs vgpu's built-in ops on its devices (vgpu/backend/op_tuning.hpp).
  /// The default, null, means the rule registered for its name (vgpu's own backends register
  /// theirs in core/runtime/device/registry.cpp) or, for a backend vgpu does not register, none:
  /// the built-in ops then fail on its devices with not_supported. Devices opened from this
  /// backend keep the tuner it returned when they were opened.
  virtual std::shared_ptr<const OpTuner> op_tuner() const { return nullptr; }
};

}  // namespace vgpu
