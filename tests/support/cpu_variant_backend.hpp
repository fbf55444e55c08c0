// SPDX-License-Identifier: Apache-2.0
// tests/support/cpu_variant_backend.hpp — a test backend whose one device is the CPU device
// described otherwise (other limits, name, fingerprint): its calls run on the CPU device
// unchanged, so a test sees how vgpu plans and refuses work for the description alone.
// Thread-safety: that of the CPU backend.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "support/test_backend.hpp"

namespace vgpu_test {

/// The CPU device as kTestBackend's device 0, its DeviceInfo changed by edit.
class CpuVariantBackend final : public vgpu::ComputeBackend {
 public:
  explicit CpuVariantBackend(std::function<void(vgpu::DeviceInfo&)> edit)
      : cpu_(vgpu::make_cpu_backend()), edit_(std::move(edit)) {}
  vgpu::BackendKind kind() const noexcept override { return kTestBackend; }
  std::shared_ptr<const vgpu::OpTuner> op_tuner() const override { return cpu_->op_tuner(); }
  std::string name() const override { return "test"; }
  vgpu::BackendStatus status() override { return {kTestBackend, true, true, {}}; }
  std::vector<vgpu::DeviceInfo> enumerate() override { return {info()}; }
  std::unique_ptr<vgpu::DeviceImpl> open(std::uint32_t) override {
    return std::make_unique<ForwardingDevice>(cpu_->open(0), info());
  }

 private:
  vgpu::DeviceInfo info() const {
    vgpu::DeviceInfo d = cpu_->enumerate().at(0);
    d.backend = kTestBackend;
    d.index = 0;
    edit_(d);
    return d;
  }
  std::unique_ptr<vgpu::ComputeBackend> cpu_;
  std::function<void(vgpu::DeviceInfo&)> edit_;
};

}  // namespace vgpu_test
