// SPDX-License-Identifier: Apache-2.0
// vgpu/device_info.hpp — what a backend reports about one device.
#pragma once

#include "vgpu/export.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vgpu/types.hpp"

namespace vgpu {

/// Compute limits that validation and selection rely on.
struct VGPU_API DeviceLimits {
  std::array<std::uint32_t, 3> max_workgroup_size{1024, 1024, 64};
  std::uint32_t max_workgroup_invocations = 1024;
  std::array<std::uint32_t, 3> max_workgroup_count{65535, 65535, 65535};
  std::uint64_t max_shared_memory_bytes = 0;
  std::uint64_t max_buffer_bytes = 0;
  std::uint32_t max_bindings = 16;
  /// The most loop iterations one shader invocation runs, counted over all its loops together
  /// (every iteration of a nested loop counts, and a loop in a branch not taken counts one):
  /// past it the driver silently stops looping, so the invocation goes on with wrong values.
  /// Mesa's llvmpipe (OpenGL) and lavapipe (Vulkan): 65 535. 0: no such limit (CUDA, the CPU
  /// device, hardware GPUs). vgpu's built-in kernels keep under it; kernels of your own must
  /// too (docs/embedding.md, "Loops on software devices").
  std::uint32_t max_loop_iterations = 0;
};

/// A stable identity of a device + driver + vgpu cache format; cache keys include it.
/// Two runs on the same machine, driver and vgpu version produce the same fingerprint.
struct VGPU_API DeviceFingerprint {
  std::string text;        ///< human-readable "key=value;..." form that was hashed
  std::uint64_t hash = 0;  ///< xxHash64 of text
  /// Returns the hash as 16 lower-case hex digits.
  std::string hex() const;
};

/// Everything vgpu knows about one device. A plain value; safe to copy between threads.
struct VGPU_API DeviceInfo {
  BackendKind backend = BackendKind::cpu;
  std::uint32_t index = 0;  ///< index within its backend, as in VGPU_DEVICE=vulkan:1
  std::string name;
  std::string vendor;
  DeviceType type = DeviceType::other;
  std::string driver_version;
  std::string api_version;
  std::uint64_t memory_bytes = 0;   ///< device memory; 0 when the driver does not tell (printed as unknown / null)
  std::uint32_t compute_units = 0;  ///< SMs, CUs, cores; 0 when the driver does not tell (unknown / null)
  // Identity as the driver reports it (vulkaninfo, nvidia-smi show the same); unknown values stay
  // empty so nothing invents an id. Not part of the fingerprint: adding them kept cache keys.
  std::optional<std::uint32_t> vendor_id;      ///< PCI vendor id, or a Khronos id (0x10005 = Mesa) on Vulkan
  std::optional<std::uint32_t> device_id;      ///< PCI device id (lavapipe reports 0, which is a value)
  std::string device_uuid;                     ///< 32 lower-case hex digits; empty when unknown
  std::string driver_uuid;                     ///< 32 lower-case hex digits; empty when unknown
  std::optional<std::uint32_t> subgroup_size;  ///< Vulkan subgroup size, CUDA warp size, GL subgroup size
  DeviceLimits limits;
  std::vector<std::string> features;
  std::vector<std::string> dialects;  ///< source dialects it compiles, preferred first (vgpu::dialect::…)
  DeviceFingerprint fingerprint;

  /// Returns "backend:index", the form VGPU_DEVICE accepts.
  std::string id() const;
};

}  // namespace vgpu
