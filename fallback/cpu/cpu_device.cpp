// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/cpu_device.cpp — CpuDevice's kernels, bindings and batches.
// Buffers live in cpu_memory.cpp and dispatch in cpu_dispatch.cpp.
#include "cpu_device.hpp"

#include <chrono>
#include <string>
#include <utility>

#include "vgpu/error.hpp"

namespace vgpu::cpu {

CpuKernelImpl::CpuKernelImpl(std::string name, BuiltinFn builtin, std::array<std::uint32_t, 3> workgroup_size)
    : name_(std::move(name)), builtin_(builtin), workgroup_size_(workgroup_size) {}

CpuKernelImpl::CpuKernelImpl(std::string name, CpuKernelFn fn, std::array<std::uint32_t, 3> workgroup_size,
                             std::vector<SpecConstant> spec_constants)
    : name_(std::move(name)),
      fn_(std::move(fn)),
      workgroup_size_(workgroup_size),
      spec_constants_(std::move(spec_constants)) {}

CpuBindingSet::CpuBindingSet(std::span<BufferImpl* const> by_slot) {
  views_.reserve(by_slot.size());
  for (BufferImpl* b : by_slot) {
    if (b == nullptr) {
      views_.push_back({});
      continue;
    }
    const auto& buf = static_cast<const CpuBuffer&>(*b);
    views_.push_back({buf.data(), buf.size()});
  }
}

CpuDevice::CpuDevice(DeviceInfo info, const KernelTable& kernels, std::shared_ptr<const BackendSettings> settings)
    : DeviceImpl(std::move(settings)), info_(std::move(info)), kernels_(kernels) {}

/// Wraps code.fn, or resolves the built-in named code.entry in this device's ISA table;
/// throws not_supported.
std::unique_ptr<KernelImpl> CpuDevice::compile(const KernelSource& source, const DialectSource& code,
                                               const CompileOptions& options) {
  if (code.fn)
    return std::make_unique<CpuKernelImpl>(source.name, code.fn, options.workgroup_size_or_default(),
                                           options.spec_constants);
  if (!code.code.empty())
    fail(ErrorCategory::not_supported,
         "kernel '" + source.name + "' gives the CPU dialect source text, which the CPU backend cannot compile.",
         "pass a C++ callable (KernelSource::add_cpu) or the name of a CPU built-in (add_cpu_builtin).");
  const BuiltinFn fn = kernels_.find(code.entry);
  if (fn == nullptr) {
    std::string names;
    for (const BuiltinEntry& e : kernels_.entries)
      if (e.fn) names += (names.empty() ? "" : ", ") + std::string(e.name);
    fail(
        ErrorCategory::not_supported,
        "kernel '" + source.name + "' asks for CPU built-in '" + code.entry + "', which the CPU backend does not have.",
        "use one of " + names + ", or pass a callable instead (KernelSource::add_cpu).");
  }
  return std::make_unique<CpuKernelImpl>(source.name, fn, options.workgroup_size_or_default());
}

/// Captures the bound buffers as CpuBufferViews indexed by slot.
std::unique_ptr<BindingSetImpl> CpuDevice::bind(KernelImpl& /*kernel*/, std::span<BufferImpl* const> by_slot) {
  return std::make_unique<CpuBindingSet>(by_slot);
}

/// Copies the commands; the batch can be submitted any number of times.
std::unique_ptr<RecordedBatchImpl> CpuDevice::record(std::span<const DispatchCommand> commands) {
  return std::make_unique<CpuBatch>(commands);
}

/// Runs every command in order and returns when all have finished; throws timeout (after
/// starting no further workgroup) once deadline has passed.
void CpuDevice::submit(RecordedBatchImpl& batch, const Deadline& deadline) {
  // In order: each dispatch sees the writes of the ones before it, since each finishes
  // (TBB joins every task) before the next starts. One deadline bounds the whole batch.
  const auto& commands = static_cast<const CpuBatch&>(batch).commands();
  if (take_injected_loss()) {
    // The test hook: the batch's first workgroup fails as a lost GPU's would, so its work is
    // abandoned unrun and the loss goes up the path a GPU backend's takes (the CPU itself is
    // never really lost).
    const std::string kernel =
        commands.empty() ? std::string("(none)") : static_cast<const CpuKernelImpl&>(*commands.front().kernel).name();
    mark_lost("a workgroup of CPU kernel '" + kernel + "' failed (a simulated device loss)");
    fail(ErrorCategory::device_lost,
         "a workgroup of CPU kernel '" + kernel + "' on '" + info_.name +
             "' failed (a simulated device loss: vgpu::testing::force_device_lost); the batch did not run.",
         "vgpu recreates the device at its next call; write the data of its buffers again.");
  }
  detail::CpuDispatchControl control{deadline, {}};
  if (!timing_dispatches()) {
    for (const DispatchCommand& cmd : commands) run_dispatch(cmd, control, *this);
    return;
  }
  const auto now_ns = [] {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
  };
  for (const DispatchCommand& cmd : commands) {
    const std::uint64_t begin = now_ns();
    run_dispatch(cmd, control, *this);
    report_dispatch_time(cmd.kernel->name, begin, now_ns());
  }
}

/// Returns at once: submit() is synchronous, so nothing is ever in flight.
void CpuDevice::synchronize(const Deadline& /*deadline*/) {}

}  // namespace vgpu::cpu
