// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/kernels/matmul_amx.hpp — the AMX bfloat16 matmul (kernels_amx.cpp), built where
// the compiler takes -mamx-tile -mamx-bf16 (VGPU_CPU_AMX_KERNELS) and entered in the AVX-512
// kernel set's table as "matmul_bf16_amx" and "matmul_batched_bf16_amx". Run it only where platform::enable_amx_tiles()
// returned true. Thread-safety: as every built-in, one call per workgroup, from any thread.
#pragma once

#include "vgpu/kernel_source.hpp"

namespace vgpu::cpu {

/// C = A·B on bfloat16 row-major matrices (slots 0 = A, 1 = B, 2 = C; MatmulParams m, n, k),
/// accumulated in float32 on AMX tiles, each result rounded once to nearest even.
void amx_bf16_matmul(const CpuWorkgroup& wg);

/// The same over stacks: MatmulBatchParams, workgroup z = one product (as "matmul_batched").
void amx_bf16_matmul_batched(const CpuWorkgroup& wg);

}  // namespace vgpu::cpu
