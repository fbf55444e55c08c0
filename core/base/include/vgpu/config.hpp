// SPDX-License-Identifier: Apache-2.0
// vgpu/config.hpp — the one place vgpu reads its VGPU_* environment variables.
//
// Every variable has one validation rule (the README's environment table lists them all).
// A bad value is never silent: it is either a warning with a Fix hint, after which the
// documented default is used, or (where running on would surprise: a misspelt backend or a
// malformed forced device) an error raised by the first call that depends on it. An unknown
// VGPU_* name, probably a typo, is warned about once, with the nearest known name.
#pragma once

#include "vgpu/export.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/log.hpp"
#include "vgpu/lru_map.hpp"
#include "vgpu/types.hpp"

namespace vgpu {

/// The default limit of every wait for device work (VGPU_TIMEOUT_MS): 60 s.
inline constexpr std::chrono::milliseconds kDefaultTimeout{60000};

/// The largest VGPU_TIMEOUT_MS accepted: 10^12 ms (about 31 years; larger values are typos).
inline constexpr std::chrono::milliseconds kMaxTimeout{1'000'000'000'000};

/// The most logical CPU devices VGPU_CPU_DEVICES may ask for.
inline constexpr std::uint32_t kMaxCpuDevices = 64;

/// The validated settings of the VGPU_* environment variables, which RuntimeOptions may
/// override per runtime (RuntimeOptions::resolve, Runtime::config()). A plain value.
struct VGPU_API Config {
  /// VGPU_BACKEND: backends to use; empty means every compiled-in one.
  std::vector<BackendKind> backends;
  /// Set when VGPU_BACKEND names something that is not a backend (RuntimeOptions::from_env throws it).
  std::string backends_error;
  /// VGPU_DEVICE: a forced device id ("vulkan:1" or "cpu"); empty when unset.
  std::string device;
  /// Set when VGPU_DEVICE is not "<backend>" or "<backend>:<index>" (RuntimeOptions::from_env throws it).
  std::string device_error;
  /// VGPU_LOG: the stderr threshold.
  LogLevel log_level = LogLevel::warn;
  /// VGPU_L1_CAPACITY: compiled kernels the in-RAM cache keeps per device (1 ... 1048576).
  std::size_t l1_capacity = 512;
  /// VGPU_PERSISTENT_CAPACITY: live persistent kernels (with their buffers) one cache keeps: a
  /// KernelDatabase, a Cache, each device's database of a ShardedDatabase, vgpu::run's pipelines
  /// per device (1 ... PersistentLimits::kMaxCount; least recently used out past it).
  std::size_t persistent_capacity = PersistentLimits::kDefaultCount;
  /// VGPU_PERSISTENT_MAX_BYTES: bytes of device memory the buffers of those kernels hold, per
  /// cache, at most (> 0; the most recently used kernel is kept even when larger on its own).
  std::uint64_t persistent_max_bytes = PersistentLimits::kDefaultBytes;
  /// VGPU_CPU_ISA: the CPU backend's forced instruction set, lower-cased; empty for the best.
  /// (Its names are the CPU backend's to check: fallback/cpu/cpu_isa.cpp.)
  std::string cpu_isa;
  /// VGPU_CPU_DEVICES: how many logical devices the CPU backend exposes (cpu:0 ... cpu:N-1,
  /// 1 ... kMaxCpuDevices; default 1). They share oneTBB's one thread pool: several exist so that
  /// multi-device code (DeviceSet) can be run and tested on a machine without several GPUs.
  std::uint32_t cpu_devices = 1;
  /// VGPU_DEVICES: the device ids of the default DeviceSet ("cuda:0,cuda:1"), trimmed, in order;
  /// empty when unset. DeviceSet::from_config() checks them against the runtime's devices.
  std::vector<std::string> devices;
  /// VGPU_CUDA_GRAPHS / VGPU_CUDA_ZERO_COPY: the CUDA backend's graph replay and zero-copy staging.
  bool cuda_graphs = true;
  bool cuda_zero_copy = true;
  /// VGPU_GL_SPIRV: whether the OpenGL backend hands SPIR-V to drivers with GL_ARB_gl_spirv
  /// (false: it always cross-compiles complete shaders and SPIR-V to GLSL with SPIRV-Cross).
  bool gl_spirv = true;
  /// VGPU_VULKAN_VALIDATION: enable VK_LAYER_KHRONOS_validation and log each of its messages as
  /// an error ("Vulkan validation: ..."). Read when the process's VkInstance is created.
  bool vulkan_validation = false;
  /// VGPU_DEVICE_TIMING: whether devices that can time their dispatches on the device do so
  /// from opening (Device::set_device_timing changes it per device).
  bool device_timing = false;
  /// VGPU_MATMUL_TILING: the matmul variant every backend's tuner always runs, lower-cased: the
  /// GLSL one on Vulkan and OpenGL ("naive" or "BMxBNxBKxTMxTN"), the CUDA one on CUDA
  /// ("BMxBNxBKxTMxTN[wWMxWN]"); a name the backend lacks fails its matmul plans with the list of
  /// its names. Empty: the tuner picks per shape and device.
  std::string matmul_tiling;
  /// VGPU_TUNE: "measure" (default: where a backend offers several variants of an op, time them
  /// once per device and size class and persist the fastest) or "rules" (never measure: the
  /// backend's rule picks). VGPU_MATMUL_TILING still forces one tiling either way.
  std::string tune = "measure";
  /// Set when VGPU_TUNE is neither (RuntimeOptions::from_env and resolve throw it).
  std::string tune_error;
  /// VGPU_BACKGROUND: whether a call whose device is still being chosen (a calibration) runs on
  /// a ready device (the CPU) while the choice is made on a background thread (true), or waits
  /// for it (false).
  bool background = true;
  /// VGPU_CACHE_DIR, else $XDG_CACHE_HOME/vgpu, else $HOME/.cache/vgpu (empty when none is set).
  std::filesystem::path cache_dir;
  /// !VGPU_CACHE_DISABLE: whether the on-disk (L2) cache is used.
  bool cache_enabled = true;
  /// VGPU_CACHE_MAX_BYTES: cap on the L2 entry files ("256M", "1G", or bytes).
  std::uint64_t cache_max_bytes = 512ull << 20;
  /// VGPU_TIMEOUT_MS: how long a wait for device work may take before it fails with
  /// ErrorCategory::timeout; zero means no limit.
  std::chrono::milliseconds timeout = kDefaultTimeout;

  /// Returns persistent_capacity and persistent_max_bytes as the bounds of one cache.
  PersistentLimits persistent_limits() const noexcept { return {persistent_capacity, persistent_max_bytes}; }

  /// Reads and validates the environment now. Logs each bad value and each unknown VGPU_*
  /// name once per process (however often it is called), then uses the default.
  static Config from_env();
};

/// Returns the process-wide settings, read from the environment on first use.
/// Thread-safety: safe from any thread; the value never changes afterwards.
VGPU_API const Config& config();

/// One VGPU_* variable vgpu knows: its name and what it does (the README table lists them all).
struct VGPU_API ConfigVariable {
  std::string_view name;
  std::string_view effect;
};

/// Returns every VGPU_* variable vgpu, its tests, benchmarks and tools read.
VGPU_API const std::vector<ConfigVariable>& config_variables();

/// Logs a warning about a bad setting once per process per distinct text (the CPU backend
/// validates VGPU_CPU_ISA's names with it). Thread-safe.
VGPU_API void config_warning(const std::string& message);

namespace config_parse {
/// Parses "1/0", "true/false", "yes/no", "on/off" (any case); nothing for anything else.
VGPU_API std::optional<bool> boolean(std::string_view text) noexcept;
/// Parses a decimal integer in [min, max], digits only (no sign, blank or unit); nothing otherwise.
VGPU_API std::optional<std::uint64_t> integer(std::string_view text, std::uint64_t min, std::uint64_t max) noexcept;
/// Parses "<digits>[K|M|G|T][iB]" (any case, binary units) to a positive byte count.
VGPU_API std::optional<std::uint64_t> bytes(std::string_view text) noexcept;
}  // namespace config_parse

}  // namespace vgpu
