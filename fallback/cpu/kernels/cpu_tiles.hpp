// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/kernels/cpu_tiles.hpp — the work one "workgroup" (one TBB task) of a CPU
// built-in covers: shared by the kernels and the CPU backend's OpTuner (cpu_op_tuner.cpp).
#pragma once

#include <cstdint>

namespace vgpu::cpu {

inline constexpr std::uint32_t kElementsPerGroup = 16384;  ///< axpy/add/mul/convert chunk
inline constexpr std::uint32_t kReduceBlock = 16384;       ///< inputs summed per group per pass

}  // namespace vgpu::cpu
