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
#include <string>

#include "vgpu/device.hpp"
#include "vgpu/kernel_plan.hpp"

namespace vgpu::detail {

/// Returns the PlanFactory of built-in op (ops::plan(op, info, shape): the rule's variant).
PlanFactory builtin_plan_factory(const std::string& op);

class DeviceCore;

/// Returns matmul's plan for info (whose op_tuner offers the variants) with the variant
/// measured on core: ops::matmul(const Device& d, …) is matmul_measured(d.info(), core of d,
/// …). Tests give an info whose tuner offers other variants than the device's own.
KernelPlan matmul_measured(const DeviceInfo& info, DeviceCore& core, std::uint32_t m, std::uint32_t k, std::uint32_t n);

/// Returns whether factory is a built-in op's (builtin_plan_factory): only its plan on an open
/// device may differ from its plan on the device's DeviceInfo.
bool is_builtin_plan_factory(const PlanFactory& factory) noexcept;

/// Returns factory's plan for shape to run on device: for a built-in op's factory
/// (builtin_plan_factory), the plan with the variant measured on device; for any other,
/// factory(device.info(), shape).
KernelPlan plan_on(const PlanFactory& factory, const Device& device, const Shape& shape);

}  // namespace vgpu::detail
