// SPDX-License-Identifier: Apache-2.0
// tests/support/tuned_plan.hpp — built-in plans under a tuner the test picks (a forced tiling, a
// wrapping tuner), not the rule registered for the device's backend. Needs the runtime's
// private headers (link vgpu_runtime_private).
#pragma once

#include <cstdint>
#include <memory>

#include "builtin_plans.hpp"
#include "vgpu/backend/op_tuning.hpp"

namespace vgpu_test {

/// Returns matmul's plan m×k×n for info as tuner says (its first candidate: nothing measured).
inline vgpu::KernelPlan matmul_with(const std::shared_ptr<const vgpu::OpTuner>& tuner, const vgpu::DeviceInfo& info,
                                    std::uint32_t m, std::uint32_t k, std::uint32_t n) {
  return vgpu::detail::builtin_plan("matmul", info, tuner.get(), vgpu::Shape{m, k, n});
}

}  // namespace vgpu_test
