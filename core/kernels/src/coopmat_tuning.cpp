// SPDX-License-Identifier: Apache-2.0
// core/kernels/src/coopmat_tuning.cpp — matmul_coopmat.comp's tilings and where they run.
#include "vgpu/kernels/coopmat_tuning.hpp"

#include <algorithm>

#include "vgpu/error.hpp"
#include "vgpu/kernels/glsl_source.hpp"

namespace vgpu::kernels {
namespace {

// Keep in step with VGPU_GLSL_PRECOMPILED (cmake/VgpuGlsl.cmake): every entry must be in L3.
// 128×128 (8 subgroups) reuses each loaded byte most; 128×64 and 64×64 (4 subgroups) give
// smaller products a grid that covers the GPU. Then, for the measured choice only, 128×128 with
// 64×64 per subgroup (4 subgroups, 16 accumulator tiles each): half the fragment loads per
// product of the 64×32 blocks.
constexpr GlslCoopMatrixTiling kTilings[] = {
    {128, 128, 32, 64, 32},
    {128, 64, 32, 64, 32},
    {64, 64, 32, 32, 32},
    {128, 128, 32, 64, 64},
};
// The rule (no measuring) picks among the first three.
constexpr std::size_t kRuleTilings = 3;

constexpr std::uint32_t kSubgroup = 32;  // the invocations matmul_coopmat.comp lays out per subgroup

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

}  // namespace

std::string GlslCoopMatrixTiling::name() const {
  return "cm" + std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + "w" + std::to_string(wm) +
         "x" + std::to_string(wn);
}

OpTuning GlslCoopMatrixTiling::tuning() const {
  OpTuning t;
  t.variant = name();
  t.per_group_x = bn;
  t.per_group_y = bm;
  t.options.workgroup_size = {(bm / wm) * (bn / wn) * kSubgroup, 1, 1};
  t.options.defines = {{"VGPU_CM_BM", std::to_string(bm)},
                       {"VGPU_CM_BN", std::to_string(bn)},
                       {"VGPU_CM_BK", std::to_string(bk)},
                       {"VGPU_CM_WM", std::to_string(wm)},
                       {"VGPU_CM_WN", std::to_string(wn)}};
  t.code = DialectSource{std::string(dialect::glsl), std::string(builtin_glsl("matmul_coopmat")), {}, {}, {}};
  t.native_dtype = true;
  t.feature = std::string(kCoopMatrixFeature);
  return t;
}

std::uint64_t GlslCoopMatrixTiling::shared_bytes() const {
  // As[2][BM][BK + 8] and Bs[2][BK][BN + 8] halves, Cs[subgroups][16·16] floats.
  const std::uint64_t subgroups = std::uint64_t{bm / wm} * (bn / wn);
  return 2ull * 2 * bm * (bk + 8) + 2ull * 2 * bk * (bn + 8) + 4ull * subgroups * 256;
}

bool GlslCoopMatrixTiling::fits(const DeviceInfo& device) const {
  const std::uint64_t limit = device.limits.max_shared_memory_bytes;
  const std::uint64_t invocations = std::uint64_t{bm / wm} * (bn / wn) * kSubgroup;
  return (limit == 0 || shared_bytes() <= limit) && invocations <= device.limits.max_workgroup_invocations;
}

std::uint64_t GlslCoopMatrixTiling::grid(std::uint64_t m, std::uint64_t n) const {
  return ceil_div(m, bm) * ceil_div(n, bn);
}

bool has_coopmat_f16(const DeviceInfo& device) {
  return device.backend == BackendKind::vulkan && device.subgroup_size == kSubgroup &&
         std::find(device.features.begin(), device.features.end(), kCoopMatrixFeature) != device.features.end();
}

std::span<const GlslCoopMatrixTiling> glsl_coopmat_tilings() { return kTilings; }

bool is_coopmat_tiling_name(std::string_view name) { return name.rfind("cm", 0) == 0; }

GlslCoopMatrixTiling glsl_coopmat_tiling(std::string_view name) {
  std::string known;
  for (const GlslCoopMatrixTiling& t : kTilings) {
    if (t.name() == name) return t;
    known += (known.empty() ? "" : ", ") + t.name();
  }
  fail(ErrorCategory::invalid_argument,
       "VGPU_MATMUL_TILING='" + std::string(name) + "' is not a Vulkan cooperative-matrix matmul tiling.",
       "set it to one of " + known + " (float16 operands on a device with cooperative matrices), or unset it.");
}

GlslCoopMatrixTiling glsl_coopmat_choice(std::uint64_t m, std::uint64_t n, std::uint64_t units,
                                         const DeviceInfo& device) {
  const GlslCoopMatrixTiling* fitting = nullptr;
  for (const GlslCoopMatrixTiling& c : std::span(kTilings).first(kRuleTilings)) {
    if (!c.fits(device)) continue;
    fitting = &c;
    if (c.grid(m, n) >= units) return c;
  }
  if (!fitting)
    fail(ErrorCategory::not_supported,
         "no cooperative-matrix matmul tiling fits " + device.id() + "'s shared memory (" +
             std::to_string(device.limits.max_shared_memory_bytes) + " bytes) or workgroup size.",
         "report this with the output of vgpu-probe.");
  return *fitting;
}

}  // namespace vgpu::kernels
