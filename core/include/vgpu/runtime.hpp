// vgpu/runtime.hpp — the registry of backends and the devices they found.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "vgpu/backend.hpp"
#include "vgpu/counters.hpp"
#include "vgpu/device.hpp"
#include "vgpu/kernel_plan.hpp"
#include "vgpu/selection.hpp"

namespace vgpu {

/// Settings normally read from the environment (VGPU_BACKEND, VGPU_DEVICE).
struct RuntimeOptions {
  std::vector<BackendKind> allowed;  ///< empty: every compiled-in backend (VGPU_BACKEND)
  std::string forced_device;         ///< "vulkan:1" style id, or empty (VGPU_DEVICE)
  /// Backends to use instead of the compiled-in registry, in preference order (the tests inject
  /// one whose speed and failures they control). Empty: the registry.
  std::vector<std::shared_ptr<ComputeBackend>> backends;
  /// Reads VGPU_BACKEND (comma list) and VGPU_DEVICE; throws invalid_argument on bad values.
  static RuntimeOptions from_env();
};

/// The ordered registry of backends (CUDA, Vulkan, OpenGL, CPU last) and the devices they
/// found. Devices are opened once and shared. Thread-safety: every member function is safe
/// to call from several threads at once. The runtime's mutex guards the backend list and the
/// open devices; it is held while backends are probed and a device is opened (both bounded by
/// the backends), never while a device works or a selection calibrates.
class Runtime {
 public:
  /// Builds a runtime over the compiled-in backends, filtered by options.
  explicit Runtime(RuntimeOptions options = RuntimeOptions::from_env());
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// Returns the process-wide runtime, created on first use from the environment and never
  /// destroyed (drivers may already be gone when static destructors run).
  static Runtime& global();

  /// Returns every compiled-in backend with its availability and reason, in registry order.
  std::vector<BackendStatus> backends();
  /// Returns every device of every allowed, available backend, in registry order.
  std::vector<DeviceInfo> devices();
  /// Opens (or returns the already open) device with this "backend:index" id; a device that
  /// was lost (Device::lost()) is replaced by a freshly opened one.
  Device open(const std::string& id);
  /// Opens (or returns the already open) device described by info (a lost one: afresh).
  Device open(const DeviceInfo& info);
  /// Returns the device to use when the caller has no preference: VGPU_DEVICE if set,
  /// else the first device in registry order (CPU last).
  Device default_device();
  /// Returns the sum of the counters of every device opened through this runtime.
  CounterSnapshot counters();

  /// Returns the device to run op at shape on: measured on the first call of its size class,
  /// persisted next to L2, forced by VGPU_DEVICE (see vgpu/selection.hpp). factory builds the
  /// plan per device (empty: the built-in op named op); throws unavailable when no device can
  /// run it, invalid_argument for an unknown op or a bad shape.
  Device select(const std::string& op, const Shape& shape, const PlanFactory& factory = {});
  /// Returns the selection for op at shape with every candidate, its timing and the source.
  Selection explain(const std::string& op, const Shape& shape, const PlanFactory& factory = {});
  /// Demotes device for op at shape's size class after it failed there (logs one line naming
  /// the next device); returns false when no other candidate is left.
  bool demote(const std::string& op, const Shape& shape, const Device& device, const std::string& reason);
  /// Returns a number that changes whenever a demotion changes a selection, so callers may
  /// keep a selected device until it moves (KernelDatabase does).
  std::uint64_t selection_epoch() const noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace vgpu
