// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/device.cpp — the public handles, forwarding to DeviceCore.
#include "vgpu/device.hpp"

#include "device_core.hpp"
#include "vgpu/error.hpp"

namespace vgpu {
namespace {

detail::DeviceCore& core_of(const std::shared_ptr<detail::DeviceCore>& core) {
  if (!core)
    fail(ErrorCategory::invalid_argument, "empty Device handle.",
         "obtain a device from Runtime::open() or Runtime::default_device().");
  return *core;
}

}  // namespace

detail::DeviceCore& detail::DeviceAccess::core(const Device& device) { return core_of(device.core_); }

std::uint64_t Buffer::size() const noexcept { return state_ ? state_->size : 0; }

const std::string& Kernel::name() const {
  if (!state_)
    fail(ErrorCategory::invalid_argument, "empty Kernel handle.", "pass a kernel returned by Device::compile().");
  return state_->source.name;
}

std::string Kernel::key_hex() const {
  if (!state_)
    fail(ErrorCategory::invalid_argument, "empty Kernel handle.", "pass a kernel returned by Device::compile().");
  return state_->key.hex();
}

const KernelReflection* Kernel::reflection() const {
  if (!state_)
    fail(ErrorCategory::invalid_argument, "empty Kernel handle.", "pass a kernel returned by Device::compile().");
  return state_->reflection ? &*state_->reflection : nullptr;
}

std::array<std::uint32_t, 3> Kernel::workgroup_size() const {
  if (!state_)
    fail(ErrorCategory::invalid_argument, "empty Kernel handle.", "pass a kernel returned by Device::compile().");
  return state_->workgroup_size;
}

const std::vector<BindingDecl>& Kernel::bindings() const {
  if (!state_)
    fail(ErrorCategory::invalid_argument, "empty Kernel handle.", "pass a kernel returned by Device::compile().");
  return state_->source.bindings;
}

std::uint32_t Kernel::params_size() const {
  if (!state_)
    fail(ErrorCategory::invalid_argument, "empty Kernel handle.", "pass a kernel returned by Device::compile().");
  return state_->source.params_size;
}

void Batch::dispatch(const Kernel& kernel, const BindingSet& bindings, const ParamsBlock& params, Groups groups) {
  if (!state_)
    fail(ErrorCategory::invalid_argument, "empty Batch handle.", "record into a batch from Device::create_batch().");
  if (!kernel.state_ || kernel.state_->owner != state_->owner)
    fail(ErrorCategory::invalid_argument, "kernel is empty or from another device than the batch.",
         "record kernels compiled on the batch's device.");
  if (!bindings.state_ || bindings.state_->owner != state_->owner)
    fail(ErrorCategory::invalid_argument, "binding set is empty or from another device than the batch.",
         "record binding sets made on the batch's device.");
  detail::validate_dispatch(state_->owner->info, *kernel.state_, *bindings.state_, params, groups);
  std::lock_guard lock(state_->mutex);
  state_->commands.push_back(detail::BatchCommand{kernel.state_, bindings.state_, params, groups});
  detail::retire(state_->device, std::move(state_->recorded));  // no longer matches; may still be queued
}

std::size_t Batch::size() const noexcept {
  if (!state_) return 0;
  std::lock_guard lock(state_->mutex);
  return state_->commands.size();
}

void Batch::clear() {
  if (!state_) return;
  std::lock_guard lock(state_->mutex);
  state_->commands.clear();
  detail::retire(state_->device, std::move(state_->recorded));
}

const DeviceInfo& Device::info() const { return core_of(core_).info(); }
CounterSnapshot Device::counters() const { return core_of(core_).counters().snapshot(); }
Buffer Device::create_buffer(std::uint64_t bytes) { return core_of(core_).create_buffer(bytes); }
std::uintptr_t Device::native_stream() const { return core_of(core_).native_stream(); }
void Device::write(const Buffer& buffer, const void* data, std::uint64_t bytes, std::uint64_t offset) {
  core_of(core_).write(buffer, data, bytes, offset);
}
void Device::read(const Buffer& buffer, void* out, std::uint64_t bytes, std::uint64_t offset) {
  core_of(core_).read(buffer, out, bytes, offset);
}
void Device::copy(const Buffer& src, const Buffer& dst, std::uint64_t bytes, std::uint64_t src_offset,
                  std::uint64_t dst_offset) {
  core_of(core_).copy(src, dst, bytes, src_offset, dst_offset);
}
Kernel Device::compile(const KernelSource& source, const CompileOptions& options) {
  return core_of(core_).compile(source, options);
}
BindingSet Device::bind(const Kernel& kernel, std::span<const Binding> bindings) {
  return core_of(core_).bind(kernel, bindings);
}
void Device::dispatch(const Kernel& kernel, const BindingSet& bindings, const ParamsBlock& params, Groups groups) {
  core_of(core_).dispatch(kernel, bindings, params, groups);
}
Batch Device::create_batch() { return core_of(core_).create_batch(); }
void Device::submit(const Batch& batch) { core_of(core_).submit(batch); }
void Device::synchronize() {
  detail::DeviceCore& core = core_of(core_);
  core.synchronize(core.timeout());
}
void Device::synchronize(std::chrono::milliseconds limit) { core_of(core_).synchronize(limit); }
void Device::round_trip(std::span<const HostWrite> writes, const Batch& batch, std::span<const HostRead> reads) {
  detail::DeviceCore& core = core_of(core_);
  core.round_trip(writes, batch, reads, core.timeout());
}
void Device::round_trip(std::span<const HostWrite> writes, const Batch& batch, std::span<const HostRead> reads,
                        std::chrono::milliseconds limit) {
  core_of(core_).round_trip(writes, batch, reads, limit);
}
void Device::set_timeout(std::chrono::milliseconds limit) { core_of(core_).set_timeout(limit); }
std::chrono::milliseconds Device::timeout() const { return core_of(core_).timeout(); }
bool Device::lost() const { return core_of(core_).lost(); }
void Device::set_label(const Buffer& buffer, const std::string& label) { core_of(core_).set_label(buffer, label); }
bool Device::can_time_dispatches() const { return core_of(core_).can_time_dispatches(); }
void Device::set_device_timing(bool on) { core_of(core_).set_device_timing(on); }
bool Device::device_timing() const { return core_of(core_).device_timing(); }
std::vector<DispatchTime> Device::dispatch_times() const { return core_of(core_).dispatch_times(); }

}  // namespace vgpu
