// SPDX-License-Identifier: Apache-2.0
// core/runtime/kernel_cache/plan_batch.hpp — a plan's steps bound to buffers and recorded as one
// batch: what PersistentKernel records once over its own buffers, and what in-place calls and
// array ops record over the caller's memory.
#pragma once

#include <span>
#include <string>

#include "vgpu/device.hpp"
#include "vgpu/kernel_plan.hpp"

namespace vgpu::detail {

/// Returns "step 2 (kernel 1, 'reduce.pass2')": where in plan a step is, for messages.
std::string step_label(const KernelPlan& plan, std::size_t index, const PlanStep& step);

/// Binds every step of plan to by_tensor (one buffer per plan tensor, in plan order) and records
/// the steps into one batch of device; kernels are the plan's compiled kernels (kernel i of the
/// plan at i). In a plan of several kernels, an error names the step. Throws what bind and
/// dispatch recording throw.
Batch record_plan(Device& device, const KernelPlan& plan, std::span<const Kernel> kernels,
                  std::span<const Buffer> by_tensor);

}  // namespace vgpu::detail
