// SPDX-License-Identifier: Apache-2.0
// core/src/call_data.hpp — the host data calibration calls a kernel with: random inputs for a
// plan's caller-visible tensors, sized by their dtypes, shared by every device whose plan takes
// the same tensors (the built-ins do), so a big problem's inputs are made and held once.
// Thread-safety: none; one calibration uses one pool from one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "vgpu/kernel_plan.hpp"
#include "vgpu/persistent_kernel.hpp"

namespace vgpu::detail {

/// Host buffers for a plan's non-scratch tensors, in [-1, 1) for f32 and small integers
/// otherwise (fixed seed), and the TensorArgs pointing at them.
struct CallData {
  std::vector<std::vector<std::uint64_t>> storage;  // 8-byte words: aligned for every dtype
  std::vector<TensorArg> args;
};

/// Returns fresh call data for plan's non-scratch tensors.
CallData make_call_data(const KernelPlan& plan);

/// Call data by tensor signature (dtype, shape, access of each non-scratch tensor).
class HostDataPool {
 public:
  /// Returns the data for plan, making it on first use of its signature.
  CallData& for_plan(const KernelPlan& plan);

 private:
  std::vector<std::pair<std::string, std::unique_ptr<CallData>>> pool_;  // stable addresses
};

}  // namespace vgpu::detail
