// SPDX-License-Identifier: Apache-2.0
// core/runtime/kernel_cache/plan_batch.cpp — a plan's steps bound and recorded into one batch.
#include "plan_batch.hpp"

#include <vector>

#include "vgpu/error.hpp"

namespace vgpu::detail {

std::string step_label(const KernelPlan& plan, std::size_t index, const PlanStep& step) {
  std::string s = "step " + std::to_string(index) + " (kernel " + std::to_string(step.kernel);
  if (step.kernel < plan.kernel_count()) s += ", '" + plan.kernel_source(step.kernel).name + "'";
  return s + ")";
}

Batch record_plan(Device& device, const KernelPlan& plan, std::span<const Kernel> kernels,
                  std::span<const Buffer> by_tensor) {
  Batch batch = device.create_batch();
  std::vector<Binding> bindings;
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep& step = plan.steps[i];
    const Kernel& kernel = kernels[step.kernel];
    bindings.clear();
    for (const auto& [slot, tensor] : step.slot_tensor) bindings.push_back(Binding{slot, by_tensor[tensor]});
    try {
      batch.dispatch(kernel, device.bind(kernel, bindings), step.params, step.groups);
    } catch (const Error& e) {
      // A one-kernel plan's errors read as they always did; in a longer one, say which step.
      if (plan.kernel_count() == 1) throw;
      throw Error(e.category(),
                  step_label(plan, i, step) + " of the plan for '" + plan.source.name + "': " + e.problem(), e.fix());
    }
  }
  return batch;
}

}  // namespace vgpu::detail
