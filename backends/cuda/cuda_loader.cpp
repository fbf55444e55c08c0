// SPDX-License-Identifier: Apache-2.0
// backends/cuda/cuda_loader.cpp — loading the CUDA driver library and NVRTC (the platform layer's
// names per OS), error names.
#include "cuda_loader.hpp"

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "vgpu/backend/exit_order.hpp"
#include "vgpu/error.hpp"
#include "vgpu/platform/dynamic_library.hpp"

namespace vgpu::cuda {
namespace {

// Two levels so the argument is macro-expanded first: VGPU_CU_STR(cuMemAlloc) is "cuMemAlloc_v2".
#define VGPU_CU_STR2(x) #x
#define VGPU_CU_STR(x) VGPU_CU_STR2(x)

std::atomic<bool> g_exiting{false};

}  // namespace

const DriverFns* load_driver(std::string* reason) {
  static DriverFns fns;
  static const DriverFns* result = nullptr;
  static std::string& why = *new std::string();  // leaked: a background probe may load first (exit_order.hpp)
  static std::once_flag once;
  std::call_once(once, [] {
    const std::vector<std::string> names = platform::runtime_library_names(platform::Runtime::cuda_driver);
    platform::DynamicLibrary lib;
    std::string e;
    for (const std::string& name : names)
      if ((lib = platform::DynamicLibrary::load(name, &e))) break;
    if (!lib) {
      why = "no NVIDIA driver library (" + (names.empty() ? std::string("none on this OS") : names.front()) +
            " could not be loaded: " + e + ")";
      return;
    }
    lib.keep_loaded();  // for the process, even when it proves unusable: cuInit may have started threads
#define VGPU_CU_LOAD(name)                                                                       \
  fns.name = reinterpret_cast<decltype(fns.name)>(lib.symbol(VGPU_CU_STR(name)));                \
  if (!fns.name) {                                                                               \
    why = "the NVIDIA driver library lacks " VGPU_CU_STR(name) " (driver too old for CUDA 12+)"; \
    return;                                                                                      \
  }
    VGPU_CU_FNS(VGPU_CU_LOAD)
#undef VGPU_CU_LOAD
    // Both take (float* ms, start, end); the _v2 name is what CUDA 13's cuda.h calls.
    for (const char* name : {"cuEventElapsedTime_v2", "cuEventElapsedTime"})
      if (!fns.cuEventElapsedTime)
        fns.cuEventElapsedTime = reinterpret_cast<decltype(fns.cuEventElapsedTime)>(lib.symbol(name));
    const CUresult r = fns.cuInit(0);
    if (r != CUDA_SUCCESS) {
      why = "cuInit failed with " + error_text(fns, r);
      return;
    }
    watch_process_exit();
    result = &fns;
  });
  if (!result && reason) *reason = why;
  return result;
}

const NvrtcFns* load_nvrtc(std::string* reason) {
  static NvrtcFns fns;
  static const NvrtcFns* result = nullptr;
  static std::string& why = *new std::string();  // leaked: a background probe may load first (exit_order.hpp)
  static std::once_flag once;
  std::call_once(once, [] {
    const char* home = std::getenv("CUDA_HOME");
    const std::vector<std::string> candidates =
        platform::runtime_library_names(platform::Runtime::nvrtc, home != nullptr ? home : "");
    platform::DynamicLibrary lib;
    for (const auto& c : candidates) {
      if ((lib = platform::DynamicLibrary::load(c, nullptr))) {
        fns.library = c;
        break;
      }
    }
    if (!lib) {
      std::string names;
      for (const auto& c : candidates) names += (names.empty() ? "" : ", ") + c;
      why = "NVRTC is missing (none of " + (names.empty() ? std::string("its libraries") : names) + " could be loaded)";
      return;
    }
    lib.keep_loaded();  // for the process: compiled programs refer into it
#define VGPU_NVRTC_LOAD(name)                                         \
  fns.name = reinterpret_cast<decltype(fns.name)>(lib.symbol(#name)); \
  if (!fns.name) {                                                    \
    why = "NVRTC (" + fns.library + ") lacks " #name;                 \
    return;                                                           \
  }
    VGPU_NVRTC_FNS(VGPU_NVRTC_LOAD)
#undef VGPU_NVRTC_LOAD
    fns.nvrtcVersion(&fns.major, &fns.minor);
    int n = 0;
    if (fns.nvrtcGetNumSupportedArchs(&n) == NVRTC_SUCCESS && n > 0) {
      fns.archs.resize(static_cast<std::size_t>(n));
      if (fns.nvrtcGetSupportedArchs(fns.archs.data()) != NVRTC_SUCCESS) fns.archs.clear();
    }
    result = &fns;
    // Loaded at a first compile, maybe on the background thread: keep its exit handler first.
    driver_exit_handlers_changed();
  });
  if (!result && reason) *reason = why;
  return result;
}

std::string error_text(const DriverFns& f, CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (!f.cuGetErrorName || f.cuGetErrorName(r, &name) != CUDA_SUCCESS || !name) name = "CUDA_ERROR_(unrecognised)";
  if (!f.cuGetErrorString || f.cuGetErrorString(r, &text) != CUDA_SUCCESS || !text) text = "";
  std::string s = name + (" (" + std::to_string(static_cast<int>(r)) + ")");
  if (*text) s += std::string(": ") + text;
  return s;
}

bool is_sticky(CUresult r) noexcept {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
      return true;
    default:
      return false;
  }
}

void fail_cu(const DriverFns& f, CUresult r, const char* call) {
  const std::string what = std::string(call) + " failed with " + error_text(f, r) + ".";
  if (is_sticky(r))
    fail(ErrorCategory::device_lost, what,
         "the fault poisoned the CUDA context (every later call in it fails): check the kernel for out-of-bounds "
         "or misaligned accesses; vgpu resets the context and recreates the device at its next call, but data in "
         "device buffers is gone: write it again.");
  if (r == CUDA_ERROR_OUT_OF_MEMORY)
    fail(ErrorCategory::out_of_memory, what, "free device buffers or use smaller problems.");
  fail(ErrorCategory::internal, what, "report this with the output of vgpu-probe.");
}

void watch_process_exit() {
  static std::once_flag once;
  std::call_once(once, [] { std::atexit([] { g_exiting.store(true); }); });
}

bool process_exiting() noexcept { return g_exiting.load(); }

}  // namespace vgpu::cuda
