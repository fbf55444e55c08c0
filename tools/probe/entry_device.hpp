// SPDX-License-Identifier: Apache-2.0
// tools/probe/entry_device.hpp — which device an L2 entry belongs to, read from the fingerprint
// text its header holds: a short description for `vgpu-probe cache list`, and the match of an
// entry against a device of this machine for the cache subcommands' --device.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "vgpu/cache/disk_store.hpp"
#include "vgpu/device_info.hpp"

namespace vgpu::probe {

/// The device an entry was written for, as its fingerprint text tells it. A plain value.
struct EntryDevice {
  std::optional<std::string> backend;  ///< "vulkan", "opengl", "cuda", "cpu"; none for a selection
  std::string name;                    ///< the device's name (as `vgpu-probe list` prints it), or the devices measured
  std::optional<std::string> driver;   ///< its version facts ("api_version 1.3.230, driver_version 1"), if any
  /// Returns "name (backend; driver)" with the parts there are ("" for an unreadable header).
  std::string text() const;
};

/// Returns the device entry belongs to, from its fingerprint text: a kernel entry's device
/// (name, renderer, model or CUDA name fact, with its driver facts), or for a selection entry,
/// whose fingerprint text is its key text, the ids of the devices it measured.
EntryDevice entry_device(const cache::DiskEntryInfo& entry);

/// Returns whether entry belongs to device: a kernel entry whose fingerprint text is the
/// device's, or a selection record whose key text names the device's id with its fingerprint
/// (a selection among several devices belongs to each). A pointer to a last selection names no
/// fingerprint and an entry whose header cannot be read names none: they belong to no device.
bool belongs_to(const cache::DiskEntryInfo& entry, const DeviceInfo& device);

/// Returns whether entry belongs to one of devices (every entry when devices is empty).
bool belongs_to_any(const cache::DiskEntryInfo& entry, const std::vector<DeviceInfo>& devices);

/// Returns this machine's devices named by ids (none when ids is empty), enumerated by a
/// runtime with the kernel cache off; throws ArgumentError (exit 2, with a Fix) for an id that
/// names no device here.
std::vector<DeviceInfo> devices_named(const std::vector<std::string>& ids);

}  // namespace vgpu::probe
