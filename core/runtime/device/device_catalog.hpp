// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/device_catalog.hpp — the backends one Runtime drives: each probed once,
// lazily, and one DeviceCore per opened device id.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "vgpu/backend_status.hpp"
#include "vgpu/counters.hpp"
#include "vgpu/device.hpp"
#include "vgpu/device_info.hpp"
#include "vgpu/types.hpp"

namespace vgpu {
class ComputeBackend;
struct BackendSettings;
}  // namespace vgpu

namespace vgpu::detail {

class DeviceCore;

/// The devices of one Runtime: its backends (registry order), what probing each found, and the
/// devices opened so far. Runtime forwards devices()/backends()/open() here, and its
/// SelectionService reaches devices through it too (never through Runtime, which owns the
/// service), so both depend on this and not on each other.
///
/// Each backend is probed once, and only when first needed: creating a Vulkan instance or a GL
/// context is not free, and probing loads the backend's vendor libraries (libvulkan and its
/// ICDs, libEGL, libcuda) into the process. So opening one device probes only its backend, and a
/// process that only ever uses cpu:0 maps none of them (issue 17).
///
/// Thread-safety: every member may be called from any thread. A backend is probed, and its
/// devices opened, under that backend's own mutex, then published under the catalog's mutex
/// (taken after a backend's, never before): a background calibration probing CUDA does not hold
/// up a call opening the CPU meanwhile.
class DeviceCatalog {
 public:
  /// The catalog of backends (kinds: their order, which may name kinds none of backends has:
  /// reported "not compiled in"), restricted to allowed (empty: all), opening devices with
  /// settings.
  DeviceCatalog(std::shared_ptr<const BackendSettings> settings, std::vector<std::shared_ptr<ComputeBackend>> backends,
                std::vector<BackendKind> kinds, std::vector<BackendKind> allowed);
  ~DeviceCatalog();
  DeviceCatalog(const DeviceCatalog&) = delete;
  DeviceCatalog& operator=(const DeviceCatalog&) = delete;

  /// Returns every backend's status, in order (probes them all).
  std::vector<BackendStatus> backends();
  /// Returns every device found, in backend order (probes every backend).
  std::vector<DeviceInfo> devices();
  /// Returns the devices of one backend, probing only it (empty for an unknown kind).
  std::vector<DeviceInfo> backend_devices(BackendKind kind);
  /// Opens the device with id ("vulkan:0", or a backend name alone for its first device), once:
  /// later calls return a handle to the same device. Throws invalid_argument for an id of no
  /// backend, unavailable naming every device there is when there is no such device.
  Device open(const std::string& id);
  /// Returns the compiled-in, allowed backends' names as a comma list ("cuda,vulkan,cpu"),
  /// known without probing any.
  std::string scope() const;
  /// Returns the sum of every opened device's counters.
  CounterSnapshot counters();

 private:
  struct Probed {
    BackendStatus status;
    std::vector<DeviceInfo> devices;
  };

  bool allowed(BackendKind k) const;
  const Probed& probe_kind(std::size_t i);
  void probe_all();
  std::size_t kind_index(BackendKind kind) const;
  std::shared_ptr<ComputeBackend> backend_of(BackendKind kind) const;
  [[noreturn]] void fail_no_device(const std::string& id, BackendKind kind);

  const std::shared_ptr<const BackendSettings> settings_;
  const std::vector<std::shared_ptr<ComputeBackend>> backends_;
  const std::vector<BackendKind> kinds_;
  const std::vector<BackendKind> allowed_;
  std::vector<std::unique_ptr<std::mutex>> kind_mutexes_;  // one per kind: held while it probes or opens
  mutable std::mutex mutex_;                               // guards what follows
  std::vector<std::optional<Probed>> probed_;              // parallel to kinds_; set once, never changed
  bool probed_all_ = false;
  std::vector<BackendStatus> statuses_;                      // every kind, in order (once probed_all_)
  std::vector<DeviceInfo> devices_;                          // every device found, in order (once probed_all_)
  std::map<std::string, std::shared_ptr<DeviceCore>> open_;  // by canonical id ("backend:index")
};

}  // namespace vgpu::detail
