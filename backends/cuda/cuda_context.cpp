// SPDX-License-Identifier: Apache-2.0
// backends/cuda/cuda_context.cpp — primary-context generations and the reset after a sticky fault.
#include "cuda_context.hpp"

#include <map>
#include <mutex>

#include "vgpu/error.hpp"
#include "vgpu/log.hpp"

namespace vgpu::cuda {
namespace {

struct Generation {
  std::uint64_t current = 1;
  bool poisoned = false;  // the current generation hit a sticky error
};

// Per process and ordinal, as the primary contexts themselves are.
std::mutex g_mutex;
std::map<CUdevice, Generation>& generations() {
  // Leaked, never destroyed: a background calibration's first CUDA open makes it, so its
  // destructor would be registered after vgpu's exit handler and run before the handler has
  // joined that thread, which then reads a destroyed map (vgpu/backend/exit_order.hpp).
  static auto* g = new std::map<CUdevice, Generation>();
  return *g;
}

}  // namespace

std::uint64_t retain_primary(const DriverFns& f, CUdevice device, CUcontext* ctx) {
  // Held across the reset and the retain, so two devices opening at once never both reset,
  // nor retain the poisoned context between the other's reset and its retain.
  std::lock_guard lock(g_mutex);
  Generation& g = generations()[device];
  if (g.poisoned) {
    // Destroys the poisoned context and everything in it; devices still holding a retain of it
    // only release it later, which the driver allows after a reset. A failed reset is no
    // reason to refuse the open: the retain below either gets a working context or the
    // device's first call reports the fault again.
    if (const CUresult r = f.cuDevicePrimaryCtxReset(device); r != CUDA_SUCCESS)
      log(LogLevel::warn, "CUDA: cuDevicePrimaryCtxReset after a sticky fault failed with " + error_text(f, r) + ".");
    g.poisoned = false;
    ++g.current;
  }
  const CUresult r = f.cuDevicePrimaryCtxRetain(ctx, device);
  if (r != CUDA_SUCCESS && is_sticky(r)) {
    g.poisoned = true;  // still: the next open tries the reset again
    char name[256] = {};
    if (f.cuDeviceGetName(name, sizeof name - 1, device) != CUDA_SUCCESS) name[0] = 0;
    fail_poisoned_process(f, r, "cuDevicePrimaryCtxRetain", name);
  }
  check_cu(f, r, "cuDevicePrimaryCtxRetain");
  return g.current;
}

void fail_poisoned_process(const DriverFns& f, CUresult r, const char* call, const std::string& name) {
  fail(ErrorCategory::unavailable,
       "the CUDA driver refuses this process a working context on '" + name + "' after a kernel fault: " + call +
           " failed with " + error_text(f, r) +
           " (the driver keeps every context of the process on that GPU poisoned; resetting the primary context, "
           "releasing it and creating a new context all fail the same way).",
       "restart the process to use CUDA on this GPU again, and fix the kernel that faulted (out-of-bounds or "
       "misaligned accesses); the other backends (Vulkan, OpenGL, CPU) keep working meanwhile, and a KernelDatabase "
       "or Cache moves to them by itself.");
}

void poison_primary(CUdevice device, std::uint64_t generation) noexcept {
  std::lock_guard lock(g_mutex);
  Generation& g = generations()[device];
  if (g.current == generation) g.poisoned = true;
}

bool primary_is_current(CUdevice device, std::uint64_t generation) noexcept {
  std::lock_guard lock(g_mutex);
  const auto it = generations().find(device);
  return it == generations().end() ? generation == 1 : it->second.current == generation;
}

}  // namespace vgpu::cuda
