// SPDX-License-Identifier: Apache-2.0
// core/kernels/kernel_abi.hpp — the binding ABI of the built-in ops, shared by core's plans
// (core/runtime/kernel_cache/ops.cpp) and every backend's implementation of them. Params structs hold only
// 4-byte scalars padded to 16 bytes so C, std430 and push-constant layouts agree.
#pragma once

#include <cstdint>

namespace vgpu::kernels {

/// matmul: slot 0 = A[m×k], slot 1 = B[k×n], slot 2 = C[m×n] (row-major float32).
struct MatmulParams {
  std::uint32_t m, n, k, pad;
};

/// matmul over stacks of matrices in one launch (matmul.comp and matmul.cu with VGPU_MM_BATCH=1,
/// the CPU's "matmul_batched"): slots as matmul, each a stack of row-major m×k, k×n and m×n
/// matrices. Workgroup z computes product i = first + z into C's matrix c_base + i, from A's
/// matrix a_base + (i / inner)·a_outer + (i % inner)·a_inner and B's likewise. Offsets count
/// whole matrices, so an operand repeated across a batch dimension (numpy's broadcasting) has
/// stride 0 there; the plan keeps every stack under 2^32 elements (GLSL indexes in 32 bits).
struct MatmulBatchParams {
  std::uint32_t m, n, k, pad;
  std::uint32_t first, inner, a_outer, a_inner;
  std::uint32_t b_outer, b_inner, a_base, b_base;
  std::uint32_t c_base, pad1, pad2, pad3;
};

/// axpy: slot 0 = a[1], slot 1 = x[n], slot 2 = y[n]; y = a*x + y.
/// add / mul: slot 0 = a[n], slot 1 = b[n], slot 2 = out[n].
/// Work item i is handled by linear group (x + y*num_x) at element
/// group*elements_per_group + local index.
struct ElementwiseParams {
  std::uint32_t n, pad0, pad1, pad2;
};

/// reduce_sum, one pass: slot 0 = in[n], slot 1 = out[ceil(n / block)]; each linear group
/// sums `block` consecutive inputs into out[group]. Passes repeat until one value remains.
struct ReduceParams {
  std::uint32_t n, pad0, pad1, pad2;
};

/// softmax_rows: slot 0 = x[rows×cols], slot 1 = out[rows×cols]; one group per row.
struct SoftmaxParams {
  std::uint32_t rows, cols, pad0, pad1;
};

/// softmax_rows split over groups (GLSL softmax_rows.comp with VGPU_SOFTMAX_SPLIT=1, for rows
/// too long for one group's loops): slots 0, 1 as above, slot 2 = stats[rows×chunks×2]; linear
/// group g takes columns [c·chunk, (c+1)·chunk) of row g / chunks (c = g % chunks, chunks =
/// ⌈cols / chunk⌉); phase 0 writes each chunk's max and sum, phase 1 the outputs.
struct SoftmaxSplitParams {
  std::uint32_t rows, cols, chunk, phase;
};

/// convert (convert.comp / convert.cu with VGPU_CONVERT_NARROW 0 or 1; the CPU's
/// "convert_widen" and "convert_narrow"): slot 0 = in[n], slot 1 = out[n]; widening reads
/// 16-bit floats and writes float32, narrowing the reverse, rounding to nearest even. format:
/// kConvertF16 or kConvertBf16. The f16/bf16 plans wrap an op's float32 kernels in these.
struct ConvertParams {
  std::uint32_t n, format, pad0, pad1;
};
inline constexpr std::uint32_t kConvertF16 = 0;   ///< ConvertParams::format of IEEE binary16
inline constexpr std::uint32_t kConvertBf16 = 1;  ///< ConvertParams::format of bfloat16

}  // namespace vgpu::kernels
