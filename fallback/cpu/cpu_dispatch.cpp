// fallback/cpu/cpu_dispatch.cpp — running one dispatch: the workgroup grid on oneTBB.
#include <cstdint>
#include <exception>
#include <new>
#include <string>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>

#include "fallback/cpu/cpu_device.hpp"
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

/// Runs groups [begin, end) of the linearised grid (x fastest) in order.
void run_range(const CpuKernelImpl& kernel, CpuWorkgroup wg, std::uint64_t begin, std::uint64_t end) {
  const std::uint64_t nx = wg.num_workgroups[0], ny = wg.num_workgroups[1];
  std::uint32_t x = static_cast<std::uint32_t>(begin % nx);
  std::uint32_t y = static_cast<std::uint32_t>((begin / nx) % ny);
  std::uint32_t z = static_cast<std::uint32_t>(begin / (nx * ny));
  for (std::uint64_t g = begin; g < end; ++g) {
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

void run_dispatch(const DispatchCommand& cmd) {
  const auto& kernel = static_cast<const CpuKernelImpl&>(*cmd.kernel);
  const auto& bindings = static_cast<const CpuBindingSet&>(*cmd.bindings);
  const std::uint64_t total = cmd.groups.total();
  if (total == 0) return;
  CpuWorkgroup proto;
  proto.buffers = bindings.views();
  proto.params = cmd.params.data();  // the command (and its ParamsBlock) outlives the dispatch
  proto.num_workgroups = {cmd.groups.x, cmd.groups.y, cmd.groups.z};
  proto.workgroup_size = kernel.workgroup_size();

  try {
    if (total == 1) {
      run_range(kernel, proto, 0, 1);  // no task overhead for a single tile
    } else {
      tbb::parallel_for(tbb::blocked_range<std::uint64_t>(0, total, grain_for(kernel)),
                        [&](const tbb::blocked_range<std::uint64_t>& r) { run_range(kernel, proto, r.begin(), r.end()); });
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
         "fix the kernel body (KernelSource::cpu.fn); throw vgpu::Error to report an expected failure.");
  } catch (...) {
    fail(kernel.is_builtin() ? ErrorCategory::internal : ErrorCategory::invalid_argument,
         "CPU kernel '" + kernel.name() + "' threw an exception that is not a std::exception.",
         "throw vgpu::Error (or a std::exception) from CPU kernels.");
  }
}

}  // namespace vgpu::cpu
