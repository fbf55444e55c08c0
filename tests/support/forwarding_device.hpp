// SPDX-License-Identifier: Apache-2.0
// tests/support/forwarding_device.hpp — a DeviceImpl that hands every call to another device
// (the CPU device, in the tests): test backends derive from it and override only the calls they
// change. Thread-safety: that of the inner device.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "vgpu/backend/compute_backend.hpp"
#include "vgpu/backend/device_impl.hpp"
#include "vgpu/backend/fingerprint.hpp"

namespace vgpu_test {

/// Returns the first device of cpu (vgpu's CPU backend) described as a device of kind called
/// name, with a fingerprint of its own: what a test backend that runs on the CPU device
/// underneath enumerates.
inline vgpu::DeviceInfo cpu_device_as(vgpu::ComputeBackend& cpu, vgpu::BackendKind kind, std::string name) {
  vgpu::DeviceInfo d = cpu.enumerate().at(0);
  d.backend = kind;
  d.name = std::move(name);
  d.fingerprint = vgpu::make_fingerprint({{"backend", std::string(vgpu::to_string(kind))}});
  return d;
}

/// Forwards every DeviceImpl call to inner, reporting info as its own description.
class ForwardingDevice : public vgpu::DeviceImpl {
 public:
  ForwardingDevice(std::unique_ptr<vgpu::DeviceImpl> inner, vgpu::DeviceInfo info)
      : inner_(std::move(inner)), info_(std::move(info)) {}

  const vgpu::DeviceInfo& info() const override { return info_; }
  std::unique_ptr<vgpu::BufferImpl> create_buffer(std::uint64_t bytes) override { return inner_->create_buffer(bytes); }
  void write(vgpu::BufferImpl& b, std::uint64_t off, const void* data, std::uint64_t bytes,
             const vgpu::Deadline& dl) override {
    inner_->write(b, off, data, bytes, dl);
  }
  void read(vgpu::BufferImpl& b, std::uint64_t off, void* out, std::uint64_t bytes, const vgpu::Deadline& dl) override {
    inner_->read(b, off, out, bytes, dl);
  }
  void copy(vgpu::BufferImpl& s, std::uint64_t so, vgpu::BufferImpl& d, std::uint64_t doff, std::uint64_t n,
            const vgpu::Deadline& dl) override {
    inner_->copy(s, so, d, doff, n, dl);
  }
  std::unique_ptr<vgpu::KernelImpl> compile(const vgpu::KernelSource& source, const vgpu::DialectSource& code,
                                            const vgpu::CompileOptions& o) override {
    return inner_->compile(source, code, o);
  }
  std::unique_ptr<vgpu::BindingSetImpl> bind(vgpu::KernelImpl& k, std::span<vgpu::BufferImpl* const> s) override {
    return inner_->bind(k, s);
  }
  std::unique_ptr<vgpu::RecordedBatchImpl> record(std::span<const vgpu::DispatchCommand> commands) override {
    return inner_->record(commands);
  }
  void submit(vgpu::RecordedBatchImpl& batch, const vgpu::Deadline& dl) override { inner_->submit(batch, dl); }
  void synchronize(const vgpu::Deadline& dl) override { inner_->synchronize(dl); }

 protected:
  std::unique_ptr<vgpu::DeviceImpl> inner_;
  vgpu::DeviceInfo info_;
};

}  // namespace vgpu_test
