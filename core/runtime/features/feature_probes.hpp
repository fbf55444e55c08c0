// SPDX-License-Identifier: Apache-2.0
// core/runtime/features/feature_probes.hpp — the probe kernels of vgpu's capability truth tests
// (vgpu/feature_check.hpp): per feature, a GLSL body that uses it (slot 0 in, slot 1 out, params
// {n}), its CPU twin (so CPU-based test devices can run it), the inputs and the expected bytes.
// Thread-safety: immutable after first use.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "vgpu/kernel_source.hpp"

namespace vgpu::detail {

/// One feature's truth test.
struct FeatureProbe {
  std::string_view feature;     ///< DeviceInfo::features name
  std::string_view capability;  ///< the SPIR-V capability a kernel using the feature declares
  std::string_view glsl;        ///< the probe body (vgpu's prelude: VGPU_PARAMS {uint n; …})
  std::uint32_t in_size = 4;    ///< bytes per input element
  std::uint32_t out_size = 4;   ///< bytes per output element
  CpuKernelFn cpu;              ///< the same computation, for devices that run the CPU dialect
  /// The n inputs' bytes (n × in_size).
  std::vector<unsigned char> (*input)(std::uint32_t n) = nullptr;
  /// The expected outputs' bytes for those inputs (n × out_size).
  std::vector<unsigned char> (*expected)(const std::vector<unsigned char>& in, std::uint32_t n) = nullptr;
  /// Bumped whenever the probe changes: part of the stored verdict's key.
  std::uint32_t version = 1;
};

/// Elements every probe runs over: two workgroups of kFeatureProbeGroup invocations.
inline constexpr std::uint32_t kFeatureProbeElements = 256;
/// The probes' workgroup size: a multiple of every subgroup size a device has.
inline constexpr std::uint32_t kFeatureProbeGroup = 128;

/// Returns every probe, in the order check_features runs them.
const std::vector<FeatureProbe>& feature_probes();

}  // namespace vgpu::detail
