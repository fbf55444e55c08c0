// SPDX-License-Identifier: Apache-2.0
// tests/support/plan_runner.hpp — run a KernelPlan two ways, with poisoned outputs:
//  * through PersistentKernel (the product path), and
//  * through the raw Device API (compile, create_buffer, write, bind, dispatch, read),
// so a bug in either layer (or one hidden by the other) shows up.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "support/numerics.hpp"
#include "vgpu/vgpu.hpp"

namespace vgpu_test {

/// Host data for a plan's non-scratch tensors, in order, as float values. Inputs are read; the
/// elements of outputs (write / read_write tensors) are replaced by the results. run_raw
/// encodes them into a tensor's own dtype (each rounded once: float16, bfloat16) and decodes its
/// results; PersistentKernel takes float32 tensors only.
using HostTensors = std::vector<std::vector<float>>;

/// Which layer runs the plan.
enum class Path { persistent, raw };

inline const char* to_string(Path p) { return p == Path::persistent ? "PersistentKernel" : "raw Device"; }

namespace detail {

inline void check_args(const vgpu::KernelPlan& plan, const HostTensors& args) {
  std::size_t a = 0;
  for (const auto& t : plan.tensors) {
    if (t.scratch) continue;
    if (a >= args.size() || args[a].size() != vgpu::element_count(t.shape))
      throw std::logic_error("test bug: host data does not match tensor '" + t.name + "' of " + plan.source.name);
    ++a;
  }
  if (a != args.size()) throw std::logic_error("test bug: too many host tensors for " + plan.source.name);
}

}  // namespace detail

/// Calls kernel once on args (read tensors as const data, outputs as mutable data).
inline void call(vgpu::PersistentKernel& kernel, HostTensors& args) {
  std::vector<vgpu::TensorArg> targs;
  std::size_t a = 0;
  for (const auto& t : kernel.plan().tensors) {
    if (t.scratch) continue;
    if (t.access == vgpu::Access::read)
      targs.emplace_back(static_cast<const float*>(args[a].data()), t.shape);
    else
      targs.emplace_back(args[a].data(), t.shape);
    ++a;
  }
  kernel(targs);
}

/// Runs an already-built persistent kernel on args. Poisoning: host outputs are NaN-filled
/// before the call, and a first call with NaN in every input leaves NaN in each device output
/// element the kernel writes (the built-ins propagate NaN), so an element the real call skips
/// shows as NaN. PersistentKernel's buffers are private, so an element that no call ever
/// writes keeps the allocation's contents here; run_raw, which writes NaN into the device
/// buffers directly, is what catches those (the conformance suite runs both paths).
inline void run_persistent(vgpu::PersistentKernel& kernel, HostTensors& args) {
  detail::check_args(kernel.plan(), args);
  HostTensors poison = args;
  for (auto& v : poison) v.assign(v.size(), kNaN);
  call(kernel, poison);
  std::size_t a = 0;
  for (const auto& t : kernel.plan().tensors) {
    if (t.scratch) continue;
    if (t.access == vgpu::Access::write) args[a].assign(args[a].size(), kNaN);
    ++a;
  }
  call(kernel, args);
}

/// Runs plan through the raw Device API. Device buffers of outputs and scratch are written
/// with NaN before the dispatches, and host outputs NaN-filled before the read back.
inline void run_raw(vgpu::Device& device, const vgpu::KernelPlan& plan, HostTensors& args) {
  detail::check_args(plan, args);
  std::vector<vgpu::Kernel> kernels;
  for (std::size_t k = 0; k < plan.kernel_count(); ++k)
    kernels.push_back(device.compile(plan.kernel_source(k), plan.kernel_options(k)));
  std::vector<vgpu::Buffer> buffers;
  std::vector<int> host_of;  // tensor index -> args index (-1 for scratch)
  std::size_t a = 0;
  for (const auto& t : plan.tensors) {
    const std::size_t count = vgpu::element_count(t.shape);
    vgpu::Buffer buf = device.create_buffer(count * vgpu::dtype_size(t.dtype));
    const auto bytes =
        encode(!t.scratch && t.access != vgpu::Access::write ? args[a] : std::vector<float>(count, kNaN), t.dtype);
    device.write(buf, bytes.data(), bytes.size());
    host_of.push_back(t.scratch ? -1 : static_cast<int>(a));
    if (!t.scratch) ++a;
    buffers.push_back(buf);
  }
  for (const auto& step : plan.steps) {
    std::vector<vgpu::Binding> bindings;
    for (const auto& [slot, tensor] : step.slot_tensor) bindings.push_back({slot, buffers[tensor]});
    const vgpu::Kernel& kernel = kernels.at(step.kernel);
    device.dispatch(kernel, device.bind(kernel, bindings), step.params, step.groups);
  }
  for (std::size_t t = 0; t < plan.tensors.size(); ++t) {
    if (host_of[t] < 0 || plan.tensors[t].access == vgpu::Access::read) continue;
    auto& out = args[static_cast<std::size_t>(host_of[t])];
    std::vector<unsigned char> bytes = encode(std::vector<float>(out.size(), kNaN), plan.tensors[t].dtype);
    device.read(buffers[t], bytes.data(), bytes.size());
    out = decode(bytes, plan.tensors[t].dtype);
  }
}

/// Runs plan on device through the chosen path.
inline void run_plan(vgpu::Device& device, const vgpu::KernelPlan& plan, HostTensors& args, Path path) {
  if (path == Path::raw) {
    run_raw(device, plan, args);
  } else {
    vgpu::PersistentKernel kernel(device, plan);
    run_persistent(kernel, args);
  }
}

}  // namespace vgpu_test
