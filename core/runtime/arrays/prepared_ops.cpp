// SPDX-License-Identifier: Apache-2.0
// core/runtime/arrays/prepared_ops.cpp — built-in ops planned once per (device, op, shape), run on arrays.
#include "prepared_ops.hpp"

#include "buffer_pool.hpp"
#include "device_core.hpp"
#include "plan_batch.hpp"
#include "vgpu/error.hpp"
#include "vgpu/ops.hpp"

namespace vgpu::detail {

std::shared_ptr<const PreparedOp> PreparedOps::get(const Device& device, const std::string& op, const Shape& shape,
                                                   DType dtype) {
  return get(device, op + std::string(to_string(dtype)) + to_string(shape),
             [&](const Device& d) { return ops::plan(op, d, shape, dtype); });
}

std::shared_ptr<const PreparedOp> PreparedOps::get(
    const Device& device, const std::string& key, const std::function<std::optional<KernelPlan>(const Device&)>& make) {
  {
    std::lock_guard lock(mutex_);
    if (auto* hit = map_.find(key)) return *hit;
  }
  // Planning may measure the op's variants on the device (ops::plan's Device form): outside the
  // lock, so other shapes are not held up.
  std::optional<KernelPlan> plan = make(device);
  std::shared_ptr<PreparedOp> p;
  std::uint64_t bytes = 0;
  if (plan) {
    p = std::make_shared<PreparedOp>();
    p->plan = std::move(*plan);
    Device d = device;
    for (std::size_t i = 0; i < p->plan.kernel_count(); ++i)
      p->kernels.push_back(d.compile(p->plan.kernel_source(i), p->plan.kernel_options(i)));
    p->by_tensor.resize(p->plan.tensors.size());
    for (std::uint32_t i = 0; i < p->plan.tensors.size(); ++i) {
      const TensorSpec& t = p->plan.tensors[i];
      if (!t.scratch) {
        p->visible.push_back(i);
        continue;
      }
      const std::uint64_t n = tensor_bytes(t.shape, t.dtype);
      p->by_tensor[i] = DeviceAccess::internal_buffer(device, n);
      bytes += n;
    }
  }
  std::lock_guard lock(mutex_);
  if (auto* raced = map_.find(key)) return *raced;
  map_.put(key, p, bytes);
  return p;
}

void run_prepared(const Device& device, const std::string& op, const Shape& shape, DType dtype,
                  std::span<const Array> args) {
  run_prepared(device, *device_arrays(device).ops.get(device, op, shape, dtype), args);
}

void run_prepared(const Device& device, const PreparedOp& p, std::span<const Array> args) {
  if (args.size() != p.visible.size())
    fail(ErrorCategory::internal,
         "op '" + p.plan.source.name + "' takes " + std::to_string(p.visible.size()) + " arrays, but was run with " +
             std::to_string(args.size()) + ".",
         "report this vgpu bug.");
  std::vector<Buffer> by_tensor = p.by_tensor;
  for (std::size_t i = 0; i < args.size(); ++i) by_tensor[p.visible[i]] = args[i].buffer();
  Device d = device;
  d.submit(record_plan(d, p.plan, p.kernels, by_tensor));
}

}  // namespace vgpu::detail
