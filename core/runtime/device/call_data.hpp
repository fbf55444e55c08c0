// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/call_data.hpp — the host data calibration calls a kernel with: random inputs for a
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

/// Host buffers for a plan's non-scratch tensors, in [-0.5, 1) for f32 (a mean of 0.25: see
/// make_call_data) and small integers otherwise (fixed seed), and the TensorArgs pointing at them.
struct CallData {
  std::vector<std::vector<std::uint64_t>> storage;  // 8-byte words: aligned for every dtype
  std::vector<TensorArg> args;
};

/// Returns fresh call data for plan's non-scratch tensors (the same values for the same
/// signature, every time).
CallData make_call_data(const KernelPlan& plan);

/// Returns the signature of plan's non-scratch tensors (dtype, shape, access of each): plans with
/// equal signatures take the same call data.
std::string call_signature(const KernelPlan& plan);

/// Call data by tensor signature.
class HostDataPool {
 public:
  /// Returns the data for plan, making it on first use of its signature. Calls change it: a
  /// read_write tensor then holds the last call's result.
  CallData& for_plan(const KernelPlan& plan);
  /// Returns the data for plan as it was made (its read_write tensors restored): the inputs a
  /// result check's reference was computed from, the same for every device.
  CallData& pristine(const KernelPlan& plan);

 private:
  struct Entry {
    std::string signature;
    std::unique_ptr<CallData> data;                   // stable address
    std::vector<std::vector<std::uint64_t>> initial;  // per storage: a read_write tensor's first values, else empty
  };
  Entry& entry(const KernelPlan& plan);
  std::vector<Entry> pool_;
};

}  // namespace vgpu::detail
