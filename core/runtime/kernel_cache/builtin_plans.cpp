// SPDX-License-Identifier: Apache-2.0
// core/runtime/kernel_cache/builtin_plans.cpp — the built-in ops' PlanFactory, and plans made
// on an open device.
#include "builtin_plans.hpp"

#include <utility>

#include "device_core.hpp"
#include "vgpu/ops.hpp"

namespace vgpu::detail {
namespace {

// What builtin_plan_factory wraps: plan_on finds it with std::function::target.
struct BuiltinPlan {
  std::string op;
  DType dtype = DType::f32;
  KernelPlan operator()(const DeviceInfo& info, const Shape& shape) const { return ops::plan(op, info, shape, dtype); }
};

}  // namespace

PlanFactory builtin_plan_factory(const std::string& op, DType dtype) { return BuiltinPlan{op, dtype}; }

std::shared_ptr<const OpTuner> op_tuner_of(const Device& device) { return DeviceAccess::core(device).op_tuner(); }

bool is_builtin_plan_factory(const PlanFactory& factory) noexcept { return factory.target<BuiltinPlan>() != nullptr; }

KernelPlan plan_on(const PlanFactory& factory, const Device& device, const Shape& shape) {
  if (const auto* builtin = factory.target<BuiltinPlan>()) return ops::plan(builtin->op, device, shape, builtin->dtype);
  return factory(device.info(), shape);
}

}  // namespace vgpu::detail
