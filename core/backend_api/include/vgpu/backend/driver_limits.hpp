// SPDX-License-Identifier: Apache-2.0
// vgpu/backend/driver_limits.hpp — limits some drivers impose that their APIs do not report.
// Backend-author interface: a backend sets DeviceLimits from these where its driver is one of them.
#pragma once

#include <cstdint>
#include <string_view>

namespace vgpu {

/// Mesa's gallivm (the LLVM JIT under llvmpipe and lavapipe) ends a shader's loops once the
/// invocation has run this many iterations of them all together (LP_MAX_TGSI_LOOP_ITERATIONS,
/// one counter per invocation shared by every loop), with no error: measured on Mesa 22.3, a
/// loop of 65 536 or more iterations runs 65 535, and two loops of 40 000 run 40 000 and 25 533.
inline constexpr std::uint32_t kGallivmLoopIterations = 65535;

/// Returns DeviceLimits::max_loop_iterations for a device whose driver names it name (Vulkan
/// deviceName, GL_RENDERER): kGallivmLoopIterations for Mesa's llvmpipe and lavapipe (both
/// report "llvmpipe (LLVM …)"), else 0.
inline std::uint32_t loop_iteration_limit_of(std::string_view name) noexcept {
  return name.find("llvmpipe") != std::string_view::npos ? kGallivmLoopIterations : 0;
}

}  // namespace vgpu
