// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/cpu_device.hpp — the CPU fallback device: host memory as "device" memory and
// oneTBB running one task per workgroup. Backend-internal; core sees only DeviceImpl.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernels/builtin_table.hpp"
#include "vgpu/backend/device_impl.hpp"

namespace vgpu::cpu {

/// A 64-byte-aligned, zero-initialised host allocation (the alignment suits every SIMD
/// load), or host memory of the caller's used in place (import_host: aligned to its elements
/// only, which the built-in kernels' unaligned loads accept). Thread-safety: the object is
/// immutable after construction; the bytes are ordered by core's call ordering, like any
/// device memory.
class CpuBuffer final : public BufferImpl {
 public:
  /// Allocates bytes; throws out_of_memory when the host cannot provide them.
  explicit CpuBuffer(std::uint64_t bytes);
  /// Uses bytes of the caller's memory at data in place; the buffer never frees it.
  CpuBuffer(void* data, std::uint64_t bytes) noexcept
      : data_(static_cast<std::byte*>(data)), bytes_(bytes), owned_(false) {}
  ~CpuBuffer() override;
  CpuBuffer(const CpuBuffer&) = delete;
  CpuBuffer& operator=(const CpuBuffer&) = delete;

  /// Returns the first byte.
  std::byte* data() const noexcept { return data_; }
  /// Returns the size in bytes.
  std::uint64_t size() const noexcept { return bytes_; }

 private:
  std::byte* data_ = nullptr;
  std::uint64_t bytes_ = 0;
  bool owned_ = true;  // false: the caller's memory (import_host)
};

/// A compiled CPU kernel: a built-in function pointer or a user callable, plus the workgroup
/// size it was compiled for. Thread-safety: immutable after construction; call from any
/// thread (a user callable must itself tolerate concurrent calls, as workgroups run in parallel).
class CpuKernelImpl final : public KernelImpl {
 public:
  /// Wraps a built-in kernel.
  CpuKernelImpl(std::string name, BuiltinFn builtin, std::array<std::uint32_t, 3> workgroup_size);
  /// Wraps a user callable, which gets spec_constants in every CpuWorkgroup.
  CpuKernelImpl(std::string name, CpuKernelFn fn, std::array<std::uint32_t, 3> workgroup_size,
                std::vector<SpecConstant> spec_constants);

  /// Runs the kernel body for one workgroup.
  void operator()(const CpuWorkgroup& wg) const {
    if (builtin_)
      builtin_(wg);
    else
      fn_(wg);
  }
  /// Returns the kernel's name, for error messages.
  const std::string& name() const noexcept { return name_; }
  /// Returns true for a built-in kernel (its failures are vgpu bugs, not user errors).
  bool is_builtin() const noexcept { return builtin_ != nullptr; }
  /// Returns the workgroup size from the CompileOptions.
  const std::array<std::uint32_t, 3>& workgroup_size() const noexcept { return workgroup_size_; }
  /// Returns the compile's specialization constants (CpuWorkgroup::spec_constants).
  std::span<const SpecConstant> spec_constants() const noexcept { return spec_constants_; }

 private:
  std::string name_;
  BuiltinFn builtin_ = nullptr;  // preferred over fn_: no std::function indirection
  CpuKernelFn fn_;
  std::array<std::uint32_t, 3> workgroup_size_;
  std::vector<SpecConstant> spec_constants_;
};

/// Buffers bound to slots, as the views a CpuWorkgroup carries (null where unbound).
/// Thread-safety: immutable after construction.
class CpuBindingSet final : public BindingSetImpl {
 public:
  /// Captures the data pointer and size of every bound buffer.
  explicit CpuBindingSet(std::span<BufferImpl* const> by_slot);
  /// Returns the views, indexed by slot.
  std::span<const CpuBufferView> views() const noexcept { return views_; }

 private:
  std::vector<CpuBufferView> views_;
};

/// A recorded batch: the validated commands, copied, run in order by submit().
/// Thread-safety: immutable after construction.
class CpuBatch final : public RecordedBatchImpl {
 public:
  /// Copies the commands (their kernel/binding pointers stay owned by core).
  explicit CpuBatch(std::span<const DispatchCommand> commands) : commands_(commands.begin(), commands.end()) {}
  /// Returns the commands in submission order.
  std::span<const DispatchCommand> commands() const noexcept { return commands_; }

 private:
  std::vector<DispatchCommand> commands_;
};

/// The CPU device. Everything is synchronous: submit() returns when the work is done, so
/// read/write need no waiting and synchronize() has nothing to do. A dispatch checks its
/// call's deadline between workgroups (no thread hop, no extra task); once it has passed, no
/// further workgroup starts, the dispatch throws timeout, and the device stays usable: it is
/// never lost, since nothing it started is still running when submit() returns. Only the
/// test hook (inject_loss) loses it: the next submit() then fails as a failed workgroup,
/// with device_lost, running nothing. Timed dispatches (timing_dispatches()) are timed on the
/// steady clock from the first workgroup's start to the last one's end.
/// Thread-safety: core's call lock serialises its calls (a dispatch already spreads its
/// workgroups over every core), compile() aside; the device holds only immutable data (its
/// DeviceInfo and kernel table), so nothing here needs a lock of its own. Destroyed objects are
/// freed at once (the default serials): no work outlives the call that started it.
class CpuDevice final : public DeviceImpl {
 public:
  /// Creates the device described by info, running built-ins from kernels, with its runtime's settings.
  CpuDevice(DeviceInfo info, const KernelTable& kernels, std::shared_ptr<const BackendSettings> settings);

  /// Returns the description made at open() (CPU model, ISA, limits).
  const DeviceInfo& info() const override { return info_; }
  /// Uses host memory in place: a CPU device's memory is the host's.
  std::unique_ptr<BufferImpl> import_host(void* data, std::uint64_t bytes) override;
  /// Returns true: every import is a view of the caller's memory.
  bool imports_host() const noexcept override { return true; }
  /// Returns the buffer's host address.
  BufferAddress address(BufferImpl& buffer) override;
  /// Returns true: the device's timer is the host's steady clock, read around each dispatch.
  bool can_time_dispatches() const noexcept override { return true; }
  VGPU_DEVICE_IMPL_OVERRIDES;

 private:
  DeviceInfo info_;
  const KernelTable& kernels_;
};

/// Runs one dispatch of device: every workgroup of cmd.groups, in parallel on the TBB pool,
/// starting no workgroup once control's deadline has passed (then throws timeout naming the
/// device); rethrows a kernel's exception as vgpu::Error. Workgroups run in a KernelScope of
/// device. Used by CpuDevice::submit, with one control per submit.
void run_dispatch(const DispatchCommand& cmd, detail::CpuDispatchControl& control, const CpuDevice& device);

}  // namespace vgpu::cpu
