// SPDX-License-Identifier: Apache-2.0
// core/runtime/kernel_cache/dtype_plan.hpp — built-in ops on 16-bit float arrays (f16, bf16):
// an op's float32 plan wrapped in conversion steps. The arguments stay in 16 bits; each is
// widened once into a float32 scratch twin before the op's kernels run, the op computes and
// accumulates in float32 as it does for float32 arrays, and each result is rounded once (to
// nearest even) back into 16 bits. docs/numerics.md states what that gives per op.
// Thread-safety: pure functions.
#pragma once

#include "vgpu/device_info.hpp"
#include "vgpu/kernel_plan.hpp"
#include "vgpu/types.hpp"

namespace vgpu {
class OpTuner;  // vgpu/backend/op_tuning.hpp
}  // namespace vgpu

namespace vgpu::detail {

/// Returns whether the built-in ops compute on arrays of dtype (f32, f16, bf16).
bool builtin_ops_compute_in(DType dtype) noexcept;

/// Throws not_supported, naming dtype, unless the built-in ops compute on it.
void require_builtin_dtype(DType dtype);

/// Returns f32_plan (a built-in op's plan whose argument tensors are all float32) for arguments
/// of dtype (f16 or bf16; f32 returns it unchanged): the conversion steps' grid is tuner's
/// "convert" tuning on dev. Throws not_supported when tuner has no "convert" op.
KernelPlan with_dtype(KernelPlan f32_plan, DType dtype, const DeviceInfo& dev, const OpTuner& tuner);

}  // namespace vgpu::detail
