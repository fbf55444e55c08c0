// SPDX-License-Identifier: Apache-2.0
// vgpu/array_ops.hpp — the built-in ops on Arrays: each runs where its arrays are and returns
// arrays there, submitting its work without waiting, so a chain of ops moves no data to the
// host until Array::read. Each (op, shape) is planned and compiled once per device.
#pragma once

#include "vgpu/export.hpp"

#include <optional>

#include "vgpu/array.hpp"
#include "vgpu/ops.hpp"

namespace vgpu {

/// Returns the shape np.matmul gives operands of shapes a and b: 1-D operands are promoted
/// (a: a row, b: a column) and the promoted dimension dropped from the result; ≥ 3-D operands
/// are stacks of matrices whose batch dimensions broadcast. Throws invalid_argument for a 0-d
/// operand, a core-dimension mismatch or batch dimensions that do not broadcast.
VGPU_API Shape matmul_shape(const Shape& a, const Shape& b);
/// Returns the dtype numpy's promotion gives a and b (float32 with int32: float64, as numpy),
/// or nothing when numpy's result (int16, int64) is not a vgpu dtype. bf16, which numpy lacks,
/// promotes as torch does (with f16: f32; with an integer: bf16).
VGPU_API std::optional<DType> promote_types(DType a, DType b);

/// Returns a @ b with np.matmul's rules (shapes: matmul_shape; a dimension of 0 gives an empty
/// result, K = 0 zeros). Both arrays must be on one device (invalid_argument naming both
/// otherwise: move one with Array::to), both float32, float16 or bfloat16 (one dtype: the
/// result's; accumulation in float32, docs/numerics.md); other dtypes are refused with
/// not_supported naming them (cast first; never a silent downcast). precision tf32 allows TF32
/// tensor cores for float32 operands (ops::Precision; used on CUDA sm_80+, elsewhere it computes
/// in float32 as highest). A stack whose b
/// is one matrix runs as one launch of (batch·M)×K by K×N; other stacks as one launch of the
/// batched kernel (docs/arrays.md says when it takes more).
VGPU_API Array matmul(const Array& a, const Array& b, ops::Precision precision = ops::Precision::highest);
/// As matmul(a, b, precision), writing the result into out (a's dtype, the result's shape, on
/// the same device, sharing no memory with a or b).
VGPU_API void matmul(const Array& a, const Array& b, const Array& out,
                     ops::Precision precision = ops::Precision::highest);
/// Returns a + b elementwise (same shape, float32, one device).
VGPU_API Array add(const Array& a, const Array& b);
/// Returns a * b elementwise (same shape, float32, one device).
VGPU_API Array multiply(const Array& a, const Array& b);
/// y += alpha · x in place (alpha: a one-element float32 array; x, y: one shape, float32).
VGPU_API void axpy(const Array& alpha, const Array& x, const Array& y);
/// Returns the sum of every element as a 0-d float32 array (pairwise within blocks; 0 when empty).
VGPU_API Array sum(const Array& x);
/// Returns softmax over the last axis (each row of x viewed as rows × last dimension), float32.
VGPU_API Array softmax_rows(const Array& x);

}  // namespace vgpu
