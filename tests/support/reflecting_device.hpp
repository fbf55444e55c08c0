// SPDX-License-Identifier: Apache-2.0
// tests/support/reflecting_device.hpp — a test backend ("reflect", one device) that runs every
// kernel on the CPU device underneath but reports, for a kernel of a given name, the
// KernelReflection the test set: it stands in for a GPU backend that reflects SPIR-V, so core's
// use of reflection (derived and checked bindings, the local size) is tested without a GPU.
// Thread-safety: the reflection table is set before kernels compile and read-only after; the
// device forwards to the CPU device.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "support/forwarding_device.hpp"
#include "vgpu/backend/compute_backend.hpp"
#include "vgpu/backend/op_tuning.hpp"
#include "vgpu/backend/device_impl.hpp"
#include "vgpu/backend/fingerprint.hpp"
#include "vgpu/backend/registry.hpp"
#include "vgpu/runtime.hpp"

namespace vgpu_test {

/// The reflect backend's kind, outside vgpu's own four.
inline const vgpu::BackendKind kReflectBackend = vgpu::BackendKind::named("reflect");

/// Reflections by kernel name; a kernel not listed is not reflected.
using ReflectionTable = std::map<std::string, vgpu::KernelReflection>;

namespace detail {

// The CPU device's kernel, with a reflection beside it.
class ReflectedKernel final : public vgpu::KernelImpl {
 public:
  ReflectedKernel(std::unique_ptr<vgpu::KernelImpl> inner, std::optional<vgpu::KernelReflection> r)
      : inner(std::move(inner)) {
    reflected = std::move(r);  // KernelImpl::reflection() reports it
  }
  std::unique_ptr<vgpu::KernelImpl> inner;
};

class ReflectingDevice final : public ForwardingDevice {
 public:
  ReflectingDevice(std::unique_ptr<vgpu::DeviceImpl> inner, vgpu::DeviceInfo info,
                   std::shared_ptr<const ReflectionTable> table)
      : ForwardingDevice(std::move(inner), std::move(info)), table_(std::move(table)) {}

  std::unique_ptr<vgpu::KernelImpl> compile(const vgpu::KernelSource& source, const vgpu::DialectSource& code,
                                            const vgpu::CompileOptions& o) override {
    std::optional<vgpu::KernelReflection> r;
    if (auto it = table_->find(source.name); it != table_->end()) r = it->second;
    // The CPU kernel runs with the reflected local size, as a GPU pipeline would.
    vgpu::CompileOptions inner_options = o;
    if (r) inner_options.workgroup_size = r->local_size;
    return std::make_unique<ReflectedKernel>(inner_->compile(source, code, inner_options), std::move(r));
  }
  std::unique_ptr<vgpu::BindingSetImpl> bind(vgpu::KernelImpl& k, std::span<vgpu::BufferImpl* const> s) override {
    return inner_->bind(*static_cast<ReflectedKernel&>(k).inner, s);
  }
  std::unique_ptr<vgpu::RecordedBatchImpl> record(std::span<const vgpu::DispatchCommand> commands) override {
    std::vector<vgpu::DispatchCommand> unwrapped(commands.begin(), commands.end());
    for (auto& c : unwrapped) c.kernel = static_cast<ReflectedKernel*>(c.kernel)->inner.get();
    return inner_->record(unwrapped);
  }

 private:
  std::shared_ptr<const ReflectionTable> table_;
};

}  // namespace detail

/// The reflect backend: device reflect:0, the CPU device reporting table's reflections.
class ReflectBackend final : public vgpu::ComputeBackend {
 public:
  explicit ReflectBackend(std::shared_ptr<const ReflectionTable> table)
      : table_(std::move(table)), cpu_(vgpu::make_cpu_backend()) {}
  vgpu::BackendKind kind() const noexcept override { return kReflectBackend; }
  std::shared_ptr<const vgpu::OpTuner> op_tuner() const override { return cpu_->op_tuner(); }
  std::string name() const override { return "reflect"; }
  vgpu::BackendStatus status() override { return {kReflectBackend, true, true, {}}; }
  std::vector<vgpu::DeviceInfo> enumerate() override { return {info()}; }
  std::unique_ptr<vgpu::DeviceImpl> open(std::uint32_t) override {
    return std::make_unique<detail::ReflectingDevice>(cpu_->open(0), info(), table_);
  }

 private:
  vgpu::DeviceInfo info() const { return vgpu_test::cpu_device_as(*cpu_, kReflectBackend, "reflecting test device"); }
  std::shared_ptr<const ReflectionTable> table_;
  std::unique_ptr<vgpu::ComputeBackend> cpu_;
};

/// Returns a runtime whose only device is reflect:0 over table.
inline vgpu::RuntimeOptions reflect_runtime_options(std::shared_ptr<const ReflectionTable> table) {
  vgpu::RuntimeOptions o;
  o.backends.push_back(std::make_shared<ReflectBackend>(std::move(table)));
  return o;
}

}  // namespace vgpu_test
