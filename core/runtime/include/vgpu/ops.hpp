// SPDX-License-Identifier: Apache-2.0
// vgpu/ops.hpp — the built-in operations, as plans for any device. A plan is a pure function
// of its arguments: the DeviceInfo forms take the rule of the device's backend for each op's
// variant (its tiling, say: vgpu's backends' from the registry, another backend's from its
// ComputeBackend::op_tuner once a Runtime holds it); the Device forms take the tuner the
// device was opened with and may measure the variants on that device first.
#pragma once

#include "vgpu/export.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "vgpu/device_info.hpp"
#include "vgpu/kernel_plan.hpp"

namespace vgpu {
class Device;
}  // namespace vgpu

namespace vgpu::ops {

/// Names of the built-in ops, as KernelDatabase and the CLI accept them: "matmul", "axpy",
/// "add", "mul", "reduce_sum", "softmax_rows" and "matmul_tf32" (matmul with TF32 allowed: see
/// Precision).
VGPU_API std::vector<std::string> names();

/// How a float32 matmul may multiply. highest (the default): in float32 throughout. tf32: the
/// device may round each input to TF32 (10 mantissa bits) and multiply on its matrix engine
/// with float32 accumulation (CUDA tensor cores on sm_80 and later; about 10⁻³ relative error,
/// vgpu::tolerance::tf32_inputs); elsewhere it computes in float32, exactly as highest. An
/// explicit opt-in, as torch.backends.cuda.matmul.allow_tf32; 16-bit operands are unaffected.
enum class Precision : std::uint8_t { highest, tf32 };

/// Returns "highest" or "tf32".
VGPU_API const char* to_string(Precision precision) noexcept;
/// Returns the precision named text ("highest", "tf32"); throws invalid_argument with a Fix
/// listing them for any other text.
VGPU_API Precision parse_precision(const std::string& text);
/// Returns the built-in op a matmul of that precision runs as: "matmul" or "matmul_tf32".
VGPU_API const char* matmul_op(Precision precision) noexcept;

/// C[M×N] = A[M×K]·B[K×N], float32, row-major. Tensors: A (read), B (read), C (write).
VGPU_API KernelPlan matmul(const DeviceInfo& device, std::uint32_t m, std::uint32_t k, std::uint32_t n);
/// y = a·x + y, float32. Tensors: a[1] (read), x[n] (read), y[n] (read_write).
VGPU_API KernelPlan axpy(const DeviceInfo& device, std::uint64_t n);
/// out = a + b elementwise, float32. Tensors: a[n], b[n] (read), out[n] (write).
VGPU_API KernelPlan add(const DeviceInfo& device, std::uint64_t n);
/// out = a * b elementwise, float32. Tensors: a[n], b[n] (read), out[n] (write).
VGPU_API KernelPlan mul(const DeviceInfo& device, std::uint64_t n);
/// out[0] = Σ x, float32 in and out, pairwise within blocks and across blocks.
/// Tensors: x[n] (read), out[1] (write), plus scratch partial sums.
VGPU_API KernelPlan reduce_sum(const DeviceInfo& device, std::uint64_t n);
/// Row-wise numerically stable softmax of x[rows×cols]. Tensors: x (read), out (write).
VGPU_API KernelPlan softmax_rows(const DeviceInfo& device, std::uint32_t rows, std::uint32_t cols);

/// Checks that op is a built-in op and shape has its form ("matmul", "matmul_tf32" {M, K, N},
/// "softmax_rows" {rows, cols}, the others {n}); throws invalid_argument naming the form.
VGPU_API void check_shape(const std::string& op, const Shape& shape);

/// Builds the plan of a built-in op from its name and shape ("matmul", "matmul_tf32" take {M, K, N},
/// "softmax_rows" {rows, cols}, the others {n}) for arguments of dtype: f32, or f16 / bf16
/// (stored in 16 bits, computed and accumulated in float32, each result rounded once to nearest
/// even: docs/numerics.md). Throws invalid_argument with the expected shape when the name or
/// shape is wrong, not_supported for another dtype.
VGPU_API KernelPlan plan(const std::string& op, const DeviceInfo& device, const Shape& shape, DType dtype = DType::f32);

/// As matmul(device.info(), m, k, n), with the variant measured on device where its backend
/// offers several: timed once per device and size class, then kept in memory and in device's
/// runtime's disk cache, so later plans and processes read it (VGPU_TUNE=rules: the rule's
/// pick). What KernelDatabase and Cache run; docs/architecture.md, "Measured variant choice".
VGPU_API KernelPlan matmul(const Device& device, std::uint32_t m, std::uint32_t k, std::uint32_t n);

/// As plan(op, device.info(), shape, dtype), with each op's variant measured on device (see
/// matmul(const Device&, …)).
VGPU_API KernelPlan plan(const std::string& op, const Device& device, const Shape& shape, DType dtype = DType::f32);

}  // namespace vgpu::ops
