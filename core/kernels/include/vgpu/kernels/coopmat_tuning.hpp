// SPDX-License-Identifier: Apache-2.0
// core/kernels/coopmat_tuning.hpp — the facts of core/kernels/glsl/matmul_coopmat.comp, the
// float16 matmul on Vulkan's cooperative matrices (VK_NV_cooperative_matrix): its tilings, where
// it runs, and which one the rule picks. gpu_tuning.cpp's tuner offers them for float16 matmuls.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "vgpu/backend/op_tuning.hpp"

namespace vgpu::kernels {

/// The DeviceInfo::features name of the cooperative matrices matmul_coopmat.comp uses (16×16×16
/// float16 products accumulated in float32); its truth test must pass before the kernel runs.
inline constexpr std::string_view kCoopMatrixFeature = "cooperative_matrix";

/// One variant of matmul_coopmat.comp: a BM×BN tile of C per workgroup, K in steps of BK, one
/// WM×WN block per 32-invocation subgroup. A plain value.
struct GlslCoopMatrixTiling {
  std::uint32_t bm = 0, bn = 0, bk = 0, wm = 0, wn = 0;

  /// Returns "cmBMxBNxBKwWMxWN", the form VGPU_MATMUL_TILING takes.
  std::string name() const;
  /// Returns the workgroup size, defines, code and flags of this variant (native float16,
  /// needing kCoopMatrixFeature).
  OpTuning tuning() const;
  /// Returns the shared memory the variant declares (As, Bs and the staging tiles), in bytes.
  std::uint64_t shared_bytes() const;
  /// Returns whether device can run the variant (its shared memory and workgroup fit the limits).
  bool fits(const DeviceInfo& device) const;
  /// Returns the workgroups an M×N product takes.
  std::uint64_t grid(std::uint64_t m, std::uint64_t n) const;
  friend bool operator==(const GlslCoopMatrixTiling&, const GlslCoopMatrixTiling&) = default;
};

/// Returns whether device may run matmul_coopmat.comp: a Vulkan device that advertises
/// kCoopMatrixFeature with 32-invocation subgroups (the kernel's layout).
bool has_coopmat_f16(const DeviceInfo& device);

/// Returns every cooperative-matrix tiling, largest tile first (each precompiled in L3).
std::span<const GlslCoopMatrixTiling> glsl_coopmat_tilings();

/// Returns whether name is of the cooperative-matrix tilings' form ("cm…").
bool is_coopmat_tiling_name(std::string_view name);

/// Returns the tiling named name; throws invalid_argument (with the list) for any other text.
GlslCoopMatrixTiling glsl_coopmat_tiling(std::string_view name);

/// Returns the largest tiling that fits device and whose M×N grid still covers units compute
/// units (the smallest that fits otherwise).
GlslCoopMatrixTiling glsl_coopmat_choice(std::uint64_t m, std::uint64_t n, std::uint64_t units,
                                         const DeviceInfo& device);

}  // namespace vgpu::kernels
