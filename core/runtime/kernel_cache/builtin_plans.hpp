// SPDX-License-Identifier: Apache-2.0
// core/runtime/kernel_cache/builtin_plans.hpp — the built-in ops as a PlanFactory, and the one
// way the runtime asks a factory for a plan on an open device. A plan is pure: a function of
// (DeviceInfo, shape). Only where the runtime holds the Device that will run it (a
// KernelDatabase build, a selection's calibration) may a built-in op's plan take the variant
// measured on that device (ops::plan(op, Device, shape), variant_choice.hpp): the explicit
// context is the Device handed in, never a device looked up by id.
// Thread-safety: pure functions, safe from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "vgpu/device.hpp"
#include "vgpu/kernel_plan.hpp"

namespace vgpu {
class OpTuner;    // vgpu/backend/op_tuning.hpp
struct OpTuning;  // vgpu/backend/op_tuning.hpp
}  // namespace vgpu

namespace vgpu::detail {

/// Returns the PlanFactory of built-in op on arguments of dtype (ops::plan(op, info, shape,
/// dtype): the rule's variant).
PlanFactory builtin_plan_factory(const std::string& op, DType dtype = DType::f32);

class DeviceCore;

/// Returns built-in op's plan for shape on info as tuner says (null tuner: not_supported),
/// with the variant measured on core where tuner offers several (null core: the rule's pick,
/// candidates().front()). ops::plan(op, info, shape) is builtin_plan with the rule registered
/// for info's backend and no core; ops::plan(op, device, shape) with the device's tuner and
/// core. Tests hand in tuners that force or offer other variants than the device's own.
/// dtype: the arguments' (f32, f16, bf16: dtype_plan.hpp; another: not_supported).
KernelPlan builtin_plan(const std::string& op, const DeviceInfo& info, const OpTuner* tuner, const Shape& shape,
                        DeviceCore* core = nullptr, DType dtype = DType::f32);

/// Returns count workgroups of a 1-D problem spread over x then y within dev's limits (the
/// kernels take linear group x + y·num_x and skip groups past the end); throws
/// invalid_argument naming op when dev cannot launch that many.
Groups linear_groups(const char* op, std::uint64_t count, const DeviceInfo& dev);

/// Returns matmul's tuning for m×k by k×n on arguments of dtype (with TF32 allowed where tf32)
/// on info as tuner says, the variant measured on core where tuner offers several (null core:
/// the rule's pick); the one choice behind matmul's and batched matmul's plans. A 16-bit dtype
/// (TF32) measures its own choice only among variants native to it (OpTuning::native_dtype,
/// ::tf32), else float32's stands. Throws invalid_argument for a zero size.
OpTuning matmul_tuning(const DeviceInfo& info, const OpTuner* tuner, DeviceCore* core, std::uint32_t m, std::uint32_t k,
                       std::uint32_t n, DType dtype = DType::f32, bool tf32 = false);

/// Returns matmul's plan m×k×n with tuning t on arguments of dtype: t's own where it is native
/// to dtype, else t's float32 plan between conversion steps (dtype_plan.hpp); named
/// "vgpu.matmul_tf32" where tf32_op (the op that allows TF32), else "vgpu.matmul".
KernelPlan matmul_plan_in(const DeviceInfo& info, const OpTuner* tuner, std::uint32_t m, std::uint32_t k,
                          std::uint32_t n, OpTuning t, DType dtype, bool tf32_op);

/// Returns built-in op's source: every dialect vgpu ships (the CPU built-in op, the GLSL file
/// glsl_file and its CUDA port of that name) plus t's own code, taken from t.
KernelSource builtin_source(const std::string& op, const char* glsl_file, std::uint32_t params_size, OpTuning& t);

/// Returns the tuner the plans of device's built-in ops use (its backend's, or the rule
/// registered for it; null when it runs none). For tools that list the variants offered.
std::shared_ptr<const OpTuner> op_tuner_of(const Device& device);

/// Returns whether factory is a built-in op's (builtin_plan_factory): only its plan on an open
/// device may differ from its plan on the device's DeviceInfo.
bool is_builtin_plan_factory(const PlanFactory& factory) noexcept;

/// Returns factory's plan for shape to run on device: for a built-in op's factory
/// (builtin_plan_factory), the plan with the variant measured on device; for any other,
/// factory(device.info(), shape).
KernelPlan plan_on(const PlanFactory& factory, const Device& device, const Shape& shape);

}  // namespace vgpu::detail
