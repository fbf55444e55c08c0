// SPDX-License-Identifier: Apache-2.0
// core/runtime/kernel_cache/batched_matmul.hpp — np.matmul over stacks of matrices: numpy's
// broadcasting of the batch dimensions, and the plan that runs a whole stack in one launch
// (matmul.comp and matmul.cu with VGPU_MM_BATCH=1, the CPU's "matmul_batched").
// Thread-safety: pure functions, safe from any thread (the plan may measure matmul's variants
// on the device, as ops::matmul(const Device&, …) does).
#pragma once

#include <cstdint>
#include <optional>

#include "vgpu/device.hpp"
#include "vgpu/kernel_plan.hpp"

namespace vgpu::detail {

/// Returns the batch dimensions of stacks a (…, M, K) and b (…, K, N) (both ≥ 2-D) broadcast as
/// numpy does; throws invalid_argument naming shown_a and shown_b (the shapes the caller gave)
/// when they do not broadcast.
Shape broadcast_batch(const Shape& a, const Shape& b, const Shape& shown_a, const Shape& shown_b);

/// Returns the row-major index, in matrices, into stack operand (≥ 2-D) of the product at
/// row-major index i of the broadcast batch dimensions batch.
std::uint64_t stack_index(const Shape& operand, const Shape& batch, std::uint64_t i);

/// Returns the plan of a (…, M, K) @ b (…, K, N) on device, both ≥ 2-D with every size ≥ 1 and
/// broadcasting batch dimensions: tensors A, B and C (batch…, M, N) hold the whole stacks, and
/// one launch computes every product (more only past the device's workgroup count along z, or
/// where A's and B's batch dimensions interleave more than twice). nullopt where the device
/// cannot run the stack so: K longer than one workgroup's loops may walk on a driver with a
/// loop limit (matmul then splits K per product), or a stack of 2^32 elements or more. dtype and
/// tf32 (TF32 allowed) choose among the variants as for one product (matmul_tuning): a variant
/// native to dtype (tensor cores) gives a plan on dtype's tensors; any other a float32 plan, which
/// the caller wraps in conversions (dtype_plan.hpp) for a 16-bit dtype.
std::optional<KernelPlan> batched_matmul_plan(const Device& device, const Shape& a, const Shape& b,
                                              DType dtype = DType::f32, bool tf32 = false);

}  // namespace vgpu::detail
