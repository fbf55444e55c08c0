// SPDX-License-Identifier: Apache-2.0
// vgpu/kernel_plan.hpp — everything a PersistentKernel needs: kernel, tensors, dispatch steps.
#pragma once

#include "vgpu/export.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "vgpu/device_info.hpp"
#include "vgpu/kernel_source.hpp"
#include "vgpu/params.hpp"
#include "vgpu/types.hpp"

namespace vgpu {

/// One tensor a plan allocates on the device. Non-scratch tensors are the call's arguments,
/// in declaration order; scratch tensors live on the device only (e.g. partial sums).
struct VGPU_API TensorSpec {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  Access access = Access::read;  ///< read: uploaded each call; write: read back; read_write: both
  bool scratch = false;
};

/// One dispatch of a plan: which kernel it runs, which tensor sits at which binding slot, its
/// params and groups.
struct VGPU_API PlanStep {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> slot_tensor;  ///< (slot, tensor index)
  ParamsBlock params;
  Groups groups;
  std::uint32_t kernel = 0;  ///< 0: KernelPlan::source; i ≥ 1: KernelPlan::more_kernels[i - 1]
};

/// One more kernel of a plan (a pass of a multi-pass algorithm), with its own specialisation.
struct VGPU_API PlanKernel {
  KernelSource source;
  CompileOptions options;
};

/// Kernels specialised for fixed shapes: compiled, allocated and bound once by
/// PersistentKernel, then run as one batch per call. Kernel 0 is source/options, kernel i ≥ 1
/// is more_kernels[i - 1]; each step names the kernel it runs. A plain value.
struct VGPU_API KernelPlan {
  KernelSource source;
  CompileOptions options;
  std::vector<TensorSpec> tensors;
  std::vector<PlanStep> steps;
  std::vector<PlanKernel> more_kernels;  ///< kernels 1, 2, … (empty for a one-kernel plan)

  /// Returns the number of kernels (1 + more_kernels.size()).
  std::size_t kernel_count() const noexcept { return 1 + more_kernels.size(); }
  /// Returns kernel i's source (i < kernel_count()).
  const KernelSource& kernel_source(std::size_t i) const { return i == 0 ? source : more_kernels.at(i - 1).source; }
  /// Returns kernel i's options (i < kernel_count()).
  const CompileOptions& kernel_options(std::size_t i) const {
    return i == 0 ? options : more_kernels.at(i - 1).options;
  }
};

/// Builds a plan for one kernel family at one shape on one device.
using PlanFactory = std::function<KernelPlan(const DeviceInfo&, const Shape&)>;

}  // namespace vgpu
