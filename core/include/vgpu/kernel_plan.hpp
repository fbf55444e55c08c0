// vgpu/kernel_plan.hpp — everything a PersistentKernel needs: kernel, tensors, dispatch steps.
#pragma once

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
struct TensorSpec {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  Access access = Access::read;  ///< read: uploaded each call; write: read back; read_write: both
  bool scratch = false;
};

/// One dispatch of a plan: which tensor sits at which binding slot, its params and groups.
struct PlanStep {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> slot_tensor;  ///< (slot, tensor index)
  ParamsBlock params;
  Groups groups;
};

/// A kernel specialised for fixed shapes: compiled, allocated and bound once by
/// PersistentKernel, then run as one batch per call. A plain value.
struct KernelPlan {
  KernelSource source;
  CompileOptions options;
  std::vector<TensorSpec> tensors;
  std::vector<PlanStep> steps;
};

/// Builds a plan for one kernel family at one shape on one device.
using PlanFactory = std::function<KernelPlan(const DeviceInfo&, const Shape&)>;

}  // namespace vgpu
