// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/cpu_dispatch.cpp — running one dispatch: the workgroup grid on oneTBB.
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <new>
#include <string>

#include "cpu_device.hpp"
#include "vgpu/error.hpp"

namespace vgpu::cpu {
namespace {

/// Groups per TBB chunk at least: built-in groups are big tiles (one each); user workgroups
/// may be a few invocations, so chunks gather ≥ ~1024 invocations to amortise task overhead.
std::uint64_t grain_for(const CpuKernelImpl& kernel) {
  if (kernel.is_builtin()) return 1;
  const auto& ws = kernel.workgroup_size();
  const std::uint64_t invocations = std::uint64_t{ws[0]} * ws[1] * ws[2];
  return invocations >= 1024 ? 1 : 1024 / (invocations ? invocations : 1);
}

/// Runs groups [begin, end) of the linearised grid (x fastest) in order. On a timed dispatch
/// it starts no group once the deadline has passed or another range saw it pass: the stop
/// flag is read before every group (one relaxed load), the clock every stride groups (a few ns
/// on the coarse clock, so a check per ~1024 invocations costs nothing measurable), and before
/// every group once a stride is seen to take milliseconds (slow workgroups).
void run_range(const CpuDevice& device, const CpuKernelImpl& kernel, CpuWorkgroup wg, std::uint64_t begin,
               std::uint64_t end, std::uint64_t stride, const DeviceImpl::KernelScope* parent) {
  // On a TBB thread too: a call on the device, or on a device whose kernel made this dispatch
  // (parent: the dispatching thread's scope), is refused.
  const DeviceImpl::KernelScope scope(device, parent);
  detail::CpuDispatchControl& control = *wg.control;
  const bool timed = control.deadline.limited();
  std::uint64_t until_check = 0;  // every range checks first: nothing starts after the deadline
  Deadline::Clock::time_point last_check{};
  const std::uint64_t nx = wg.num_workgroups[0], ny = wg.num_workgroups[1];
  std::uint32_t x = static_cast<std::uint32_t>(begin % nx);
  std::uint32_t y = static_cast<std::uint32_t>((begin / nx) % ny);
  std::uint32_t z = static_cast<std::uint32_t>(begin / (nx * ny));
  for (std::uint64_t g = begin; g < end; ++g) {
    if (timed) {
      if (control.stop.load(std::memory_order_relaxed)) return;
      if (until_check-- == 0) {
        const Deadline::Clock::time_point now = Deadline::now();
        if (now >= control.deadline.when()) {
          control.stop.store(true, std::memory_order_relaxed);
          return;
        }
        // 10 ms is over two ticks of the coarse clock, so never a rounding artefact.
        if (last_check != Deadline::Clock::time_point{} && now - last_check >= std::chrono::milliseconds(10))
          stride = 1;
        last_check = now;
        until_check = stride - 1;
      }
    }
    wg.workgroup_id = {x, y, z};
    kernel(wg);
    if (++x == nx) {  // step without dividing per group
      x = 0;
      if (++y == ny) {
        y = 0;
        ++z;
      }
    }
  }
}

}  // namespace

void run_dispatch(const DispatchCommand& cmd, detail::CpuDispatchControl& control, const CpuDevice& cpu) {
  const DeviceInfo& device = cpu.info();
  const auto& kernel = static_cast<const CpuKernelImpl&>(*cmd.kernel);
  const auto& bindings = static_cast<const CpuBindingSet&>(*cmd.bindings);
  const std::uint64_t total = cmd.groups.total();
  if (total == 0) return;
  const Deadline& deadline = control.deadline;
  CpuWorkgroup proto;
  proto.buffers = bindings.views();
  proto.params = cmd.params.data();  // the command (and its ParamsBlock) outlives the dispatch
  proto.num_workgroups = {cmd.groups.x, cmd.groups.y, cmd.groups.z};
  proto.workgroup_size = kernel.workgroup_size();
  proto.spec_constants = kernel.spec_constants();
  proto.control = &control;
  const std::uint64_t grain = grain_for(kernel);

  try {
    if (total == 1) {
      const DeviceImpl::KernelScope scope(cpu);
      kernel(proto);  // one tile: no task and no loop (its deadline check is the one below)
    } else {
      // A stopped range returns at once, so the tasks TBB still starts after the deadline
      // cost a flag read each; no task_group_context (and its registration) per dispatch.
      // Isolated: this thread holds the device's call lock, so while it waits for its groups it
      // must not pick up an outer task of the caller's (say, another iteration of a
      // tbb::parallel_for that dispatches on this device), which would wait for that lock.
      const DeviceImpl::KernelScope* parent = DeviceImpl::KernelScope::current();
      tbb::this_task_arena::isolate([&] {
        tbb::parallel_for(tbb::blocked_range<std::uint64_t>(0, total, grain),
                          [&](const tbb::blocked_range<std::uint64_t>& r) {
                            run_range(cpu, kernel, proto, r.begin(), r.end(), grain, parent);
                          });
      });
    }
  } catch (const Error&) {
    throw;  // already vgpu's own, with its category and fix (TBB rethrows the original)
  } catch (const std::bad_alloc&) {
    fail(ErrorCategory::out_of_memory, "CPU kernel '" + kernel.name() + "' ran out of host memory.",
         "free buffers or use smaller tensors; a built-in kernel needs a few hundred KiB of scratch per thread.");
  } catch (const std::exception& e) {
    if (kernel.is_builtin())
      fail(ErrorCategory::internal, "CPU built-in kernel '" + kernel.name() + "' threw: " + e.what() + ".",
           "this is a vgpu bug; please report it with the shapes used.");
    fail(ErrorCategory::invalid_argument, "CPU kernel '" + kernel.name() + "' threw: " + e.what() + ".",
         "fix the kernel body (the kernel's callable (KernelSource::add_cpu)); throw vgpu::Error to report an expected "
         "failure.");
  } catch (...) {
    fail(kernel.is_builtin() ? ErrorCategory::internal : ErrorCategory::invalid_argument,
         "CPU kernel '" + kernel.name() + "' threw an exception that is not a std::exception.",
         "throw vgpu::Error (or a std::exception) from CPU kernels.");
  }
  // Late by the end counts too: a workgroup that polled expired() may have cut its work short.
  if (deadline.limited() && (control.stop.load(std::memory_order_relaxed) || deadline.expired()))
    fail_timeout(device, deadline,
                 "running CPU kernel '" + kernel.name() + "' (" + std::to_string(total) +
                     " workgroups; those not started by then were skipped, and a running one cannot be preempted)",
                 false);
}

}  // namespace vgpu::cpu
