// SPDX-License-Identifier: Apache-2.0
// vgpu/runtime.hpp — the registry of backends and the devices they found.
#pragma once

#include "vgpu/export.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "vgpu/backend_status.hpp"
#include "vgpu/config.hpp"
#include "vgpu/counters.hpp"
#include "vgpu/device.hpp"
#include "vgpu/kernel_plan.hpp"
#include "vgpu/log.hpp"
#include "vgpu/selection.hpp"

namespace vgpu {

class ComputeBackend;  // vgpu/backend/compute_backend.hpp (backend-author interface)

/// How a Runtime is set up. The first three fields are plain values (RuntimeOptions::from_env()
/// fills allowed and forced_device from VGPU_BACKEND and VGPU_DEVICE; a default-constructed
/// RuntimeOptions uses every backend and forces no device). Every std::optional field is an
/// override: set, it wins over its VGPU_* variable for this runtime; unset, the variable (or
/// its default) applies, as the environment reads when the Runtime is constructed. The Runtime
/// constructor checks them (invalid_argument, naming the field). Runtime::config() returns the
/// result. A plain value; every field has a default member initialiser, so aggregate and
/// designated initialisation may name just a few.
struct VGPU_API RuntimeOptions {
  std::vector<BackendKind> allowed{};  ///< empty: every compiled-in backend (VGPU_BACKEND)
  std::string forced_device{};         ///< "vulkan:1" style id, or empty (VGPU_DEVICE)
  /// Backends to use instead of the compiled-in registry, in preference order (the tests inject
  /// one whose speed and failures they control). Empty: the registry.
  std::vector<std::shared_ptr<ComputeBackend>> backends{};

  /// VGPU_CACHE_DIR: the on-disk (L2) cache directory of this runtime's kernels and selections.
  std::optional<std::filesystem::path> cache_dir{};
  /// VGPU_CACHE_DISABLE (inverted): false keeps compiled kernels and selections in memory only.
  std::optional<bool> cache_enabled{};
  /// VGPU_CACHE_MAX_BYTES: cap on the bytes of the on-disk cache's entry files (> 0).
  std::optional<std::uint64_t> cache_max_bytes{};
  /// VGPU_L1_CAPACITY: compiled kernels the in-RAM cache keeps per device (1 ... 1048576).
  std::optional<std::size_t> l1_capacity{};
  /// VGPU_PERSISTENT_CAPACITY: live persistent kernels one cache keeps (1 ... 1048576): each
  /// KernelDatabase and Cache of this runtime (or on its devices), vgpu::run's pipelines per device.
  std::optional<std::size_t> persistent_capacity{};
  /// VGPU_PERSISTENT_MAX_BYTES: bytes of device memory those kernels' buffers hold per cache (> 0).
  std::optional<std::uint64_t> persistent_max_bytes{};
  /// VGPU_CPU_ISA: the CPU backend's instruction set ("sse2", "avx2", "avx512"; empty: the best).
  /// Unlike the variable, an unknown name is an error; one this CPU cannot run leaves the CPU
  /// backend unavailable (Runtime::backends() says why).
  std::optional<std::string> cpu_isa{};
  /// VGPU_CPU_DEVICES: the logical CPU devices cpu:0 ... cpu:N-1 (1 ... kMaxCpuDevices).
  std::optional<std::uint32_t> cpu_devices{};
  /// VGPU_TIMEOUT_MS: the limit each device of this runtime starts with (0: none; at most kMaxTimeout).
  std::optional<std::chrono::milliseconds> timeout{};
  /// VGPU_CUDA_GRAPHS / VGPU_CUDA_ZERO_COPY: the CUDA backend's graph replay and zero-copy staging.
  std::optional<bool> cuda_graphs{};
  std::optional<bool> cuda_zero_copy{};
  /// VGPU_GL_SPIRV: false makes OpenGL cross-compile complete shaders and SPIR-V to GLSL.
  std::optional<bool> gl_spirv{};
  /// VGPU_BACKGROUND: false makes a call wait for its device's calibration instead of running
  /// on the CPU while the calibration runs on a background thread.
  std::optional<bool> background{};
  /// Logging is process-wide (vgpu/log.hpp): when log_level or log_sink is set, the Runtime
  /// routes every log line of the process (set_log_sink) from its construction until its
  /// destruction, unless a later route replaced it; it then restores stderr at VGPU_LOG's level.
  /// VGPU_LOG: the threshold of the lines routed (unset: VGPU_LOG's).
  std::optional<LogLevel> log_level{};
  /// Receives each log line instead of stderr (empty: stderr). Called one line at a time, on the
  /// thread that logs; see set_log_sink for what it may do.
  LogSink log_sink{};

  /// Reads VGPU_BACKEND (comma list) and VGPU_DEVICE; throws invalid_argument on bad values.
  /// Leaves every override unset (the environment applies to those anyway).
  static RuntimeOptions from_env();
  /// Returns env with allowed, forced_device and every set override in place; throws
  /// invalid_argument with a Fix hint naming an override that is out of range.
  Config resolve(const Config& env) const;
};

/// The ordered registry of backends (CUDA, Vulkan, OpenGL, CPU last) and the devices they
/// found. Devices are opened once and shared. Thread-safety: every member function is safe
/// to call from several threads at once. The runtime's mutex guards the backend list and the
/// open devices, briefly; probing a backend and opening one of its devices hold that backend's
/// own mutex instead (both bounded by the backend), so a background calibration probing one
/// backend never holds up a call on another. No lock is held while a device works or a
/// selection calibrates. Backends are probed lazily, each once: open() probes only the id's
/// backend (so a process that only uses cpu:0 loads no GPU runtime), backends() and devices()
/// probe them all. Destroying a runtime cancels its background calibrations and joins them
/// first; so does process exit for the global one.
class VGPU_API Runtime {
 public:
  /// Builds a runtime over the compiled-in backends, filtered by options, with options'
  /// overrides over the environment as it reads now; throws invalid_argument for a bad override.
  explicit Runtime(RuntimeOptions options = RuntimeOptions::from_env());
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// Returns the process-wide runtime, created on first use from the environment and never
  /// destroyed (drivers may already be gone when static destructors run).
  static Runtime& global();

  /// Returns the settings this runtime uses: RuntimeOptions' overrides over the environment.
  const Config& config() const noexcept;
  /// Returns every compiled-in backend with its availability and reason, in registry order (probes them all).
  std::vector<BackendStatus> backends();
  /// Returns every device of every allowed, available backend, in registry order (probes them all).
  std::vector<DeviceInfo> devices();
  /// Returns the devices of one backend (none when it is unknown, excluded or unavailable),
  /// probing only that backend: the others' vendor libraries stay unloaded.
  std::vector<DeviceInfo> backend_devices(BackendKind kind);
  /// Opens (or returns the already open) device with this "backend:index" id, probing only that
  /// backend (all of them when it has no such device, to list them); a device that was lost
  /// (Device::lost()) is returned as it is: its next call recovers it in place.
  Device open(const std::string& id);
  /// Opens (or returns the already open) device described by info (a lost one recovers at its next call).
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
  /// Returns the selection for op at shape with every candidate, its timing and the source
  /// (calibrating first, in the foreground, when nothing has chosen it yet; while a background
  /// calibration runs, the interim selection: source interim).
  Selection explain(const std::string& op, const Shape& shape, const PlanFactory& factory = {});
  /// Returns the selection a call should use now: as explain(), except that when the choice must
  /// first be measured and background work is on (VGPU_BACKGROUND, RuntimeOptions::background),
  /// it returns at once an interim selection (source interim) of a device that is ready — the
  /// CPU, or on a recheck the stored choice — while the calibration runs on a background thread;
  /// selection_epoch() changes when it finishes. KernelDatabase (and so Cache) calls this.
  Selection choose(const std::string& op, const Shape& shape, const PlanFactory& factory = {});
  /// Measures op's size class at shape on every device again, in the foreground, with the
  /// current choice as the incumbent (kept where it is within 1.10 of the best), stores the
  /// result and uses it from now on (vgpu-probe select --recalibrate).
  Selection recalibrate(const std::string& op, const Shape& shape, const PlanFactory& factory = {});
  /// Waits until no background calibration is queued or running, at most timeout; returns
  /// false when it timed out.
  bool settle(std::chrono::milliseconds timeout = std::chrono::minutes(10));
  /// Returns what background calibration has done in this runtime so far.
  BackgroundStats background_stats() const noexcept;
  /// Stops the background calibrations of every runtime that exists now, as process exit does
  /// (its exit handler runs before the drivers' own): queued ones are dropped, a running one
  /// finishes the driver call it is in and stops, unrecorded and unlogged, and the threads are
  /// joined. Those runtimes' choose() then keeps the interim device of a class still to be
  /// measured (explain() and select() still calibrate, in the foreground). For hosts whose exit
  /// runs code before the C exit handlers (the Python module calls it from Python's atexit).
  /// Idempotent. Thread-safety: any thread but a background calibration's (a factory's).
  static void stop_background_work() noexcept;
  /// Demotes device for op at shape's size class after it failed there (logs one line naming
  /// the next device); returns false when no other candidate is left.
  bool demote(const std::string& op, const Shape& shape, const Device& device, const std::string& reason);
  /// Returns a number that changes whenever a demotion or a finished background calibration
  /// changes a selection, so callers may keep a selected device until it moves (KernelDatabase does).
  std::uint64_t selection_epoch() const noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace vgpu
