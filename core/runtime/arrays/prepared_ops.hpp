// SPDX-License-Identifier: Apache-2.0
// core/runtime/arrays/prepared_ops.hpp — built-in ops run on arrays: each (op, shape) planned and
// compiled once per device, then bound to the arrays of each call and submitted without waiting.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "vgpu/array.hpp"
#include "vgpu/kernel_plan.hpp"
#include "vgpu/lru_map.hpp"

namespace vgpu::detail {

/// One built-in op planned and compiled for one shape on one device, with its scratch tensors'
/// buffers (a call on the same device reuses them: calls run in submission order).
/// Thread-safety: immutable once made.
struct PreparedOp {
  KernelPlan plan;
  std::vector<Kernel> kernels;
  std::vector<Buffer> by_tensor;       // scratch tensors' buffers; empty at the visible tensors
  std::vector<std::uint32_t> visible;  // the plan's non-scratch tensors, in argument order
};

/// The prepared ops of one device, least recently used out past 64 shapes (a DeviceCore
/// attachment). Thread-safety: safe from any thread (a mutex guards the map; preparing runs
/// outside it, so two threads may prepare one shape at once and the first stored wins).
class PreparedOps {
 public:
  /// Returns op (a vgpu::ops name) prepared for shape (its ops::plan shape) and arguments of
  /// dtype on device.
  std::shared_ptr<const PreparedOp> get(const Device& device, const std::string& op, const Shape& shape, DType dtype);

  /// Returns the op stored under key, made with make(device) on first use: nullptr (also kept)
  /// where make says the device cannot run it (nullopt).
  std::shared_ptr<const PreparedOp> get(const Device& device, const std::string& key,
                                        const std::function<std::optional<KernelPlan>(const Device&)>& make);

 private:
  std::mutex mutex_;
  LruMap<std::string, std::shared_ptr<const PreparedOp>> map_{PersistentLimits{64, PersistentLimits::kDefaultBytes}};
};

/// Runs op at shape on device over args (one array of dtype per visible tensor of the plan, in
/// order; each on device and at least as large as its tensor): binds them, records the steps
/// and submits them, returning without waiting for the device.
void run_prepared(const Device& device, const std::string& op, const Shape& shape, DType dtype,
                  std::span<const Array> args);

/// Runs p (prepared on device) over args as run_prepared above.
void run_prepared(const Device& device, const PreparedOp& p, std::span<const Array> args);

}  // namespace vgpu::detail
