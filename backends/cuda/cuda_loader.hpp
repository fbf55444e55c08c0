// SPDX-License-Identifier: Apache-2.0
// backends/cuda/cuda_loader.hpp — the CUDA driver API (libcuda.so.1) and NVRTC
// (libnvrtc.so.13, then .12), both dlopen'ed at run time so one binary runs anywhere and
// reports what is missing. Only cuda.h / nvrtc.h are needed to build.
// cuda.h renames many entry points with macros (cuMemAlloc → cuMemAlloc_v2, cuLaunchKernel →
// its per-thread-stream variant when asked): the tables below resolve exactly the names the
// macros produce, so a call through them has the ABI the header declares.
// Thread-safety: load_driver()/load_nvrtc() are safe to call concurrently (once each); the
// returned tables are immutable.
#pragma once

#include <cuda.h>
#include <nvrtc.h>

#include <string>
#include <vector>

namespace vgpu::cuda {

// An X-macro list, which clang-format-14 lays out differently on each run.
// clang-format off
#define VGPU_CU_FNS(X) \
  X(cuGetErrorName) X(cuGetErrorString) X(cuInit) X(cuDriverGetVersion) X(cuDeviceGet) X(cuDeviceGetCount) \
  X(cuDeviceGetName) X(cuDeviceGetUuid) X(cuDeviceTotalMem) X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) \
  X(cuCtxSetCurrent) X(cuMemAlloc) X(cuMemFree) X(cuMemHostAlloc) X(cuMemFreeHost) X(cuMemHostGetDevicePointer) \
  X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) \
  X(cuStreamQuery) X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuLaunchKernel) X(cuStreamBeginCapture) \
  X(cuStreamEndCapture) X(cuGraphInstantiate) X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy) X(cuDevicePrimaryCtxReset) \
  X(cuEventCreate) X(cuEventRecord) X(cuEventQuery) X(cuEventSynchronize) X(cuEventDestroy) X(cuPointerGetAttribute) \
  X(cuMemHostRegister) X(cuMemHostUnregister) X(cuModuleGetGlobal) X(cuFuncSetAttribute) X(cuFuncGetAttribute) X(cuMemcpyDtoH)
// clang-format on

// An X-macro list, which clang-format-14 lays out differently on each run.
// clang-format off
#define VGPU_NVRTC_FNS(X) \
  X(nvrtcGetErrorString) X(nvrtcVersion) X(nvrtcGetNumSupportedArchs) X(nvrtcGetSupportedArchs) X(nvrtcCreateProgram) X(nvrtcDestroyProgram) \
  X(nvrtcCompileProgram) X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog) X(nvrtcGetPTXSize) X(nvrtcGetPTX) X(nvrtcGetCUBINSize) \
  X(nvrtcGetCUBIN)
// clang-format on

/// The driver API entry points (member names are the macro-renamed ones, as calls expect).
struct DriverFns {
#define VGPU_CU_MEMBER(name) decltype(&::name) name = nullptr;
  VGPU_CU_FNS(VGPU_CU_MEMBER)
#undef VGPU_CU_MEMBER
  /// Optional: cuEventElapsedTime_v2 (drivers of CUDA 12.8 on), else the original; null when
  /// the driver has neither (dispatch timing is then off, nothing else is lost).
  decltype(&::cuEventElapsedTime) cuEventElapsedTime = nullptr;
};

/// The NVRTC entry points plus what the library reports about itself.
struct NvrtcFns {
#define VGPU_NVRTC_MEMBER(name) decltype(&::name) name = nullptr;
  VGPU_NVRTC_FNS(VGPU_NVRTC_MEMBER)
#undef VGPU_NVRTC_MEMBER
  int major = 0, minor = 0;  ///< nvrtcVersion()
  std::vector<int> archs;    ///< nvrtcGetSupportedArchs(), e.g. 75, 80, ..., 121
  std::string library;       ///< the file that was loaded
};

/// Loads libcuda.so.1 and calls cuInit(0); returns nullptr with *reason set when that fails
/// (no driver library, a missing entry point, or cuInit's error by name).
const DriverFns* load_driver(std::string* reason);

/// Loads NVRTC (libnvrtc.so.13, libnvrtc.so.12, then the same under /usr/local/cuda/lib64 and
/// $CUDA_HOME/lib64); returns nullptr with *reason set when none loads. Needs no GPU.
const NvrtcFns* load_nvrtc(std::string* reason);

/// Returns "CUDA_ERROR_XXX: description" for r (the driver's own names).
std::string error_text(const DriverFns& f, CUresult r);

/// Returns true for the errors that leave a CUDA context unusable for good (sticky errors:
/// every later call in the context fails with the same error).
bool is_sticky(CUresult r) noexcept;

/// Throws vgpu::Error for a failed driver call: out_of_memory, device_lost (a sticky error) or internal.
[[noreturn]] void fail_cu(const DriverFns& f, CUresult r, const char* call);

/// Throws via fail_cu when r is not CUDA_SUCCESS.
inline void check_cu(const DriverFns& f, CUresult r, const char* call) {
  if (r != CUDA_SUCCESS) fail_cu(f, r, call);
}

/// Registers (once) an atexit hook that marks the process as exiting; called after the driver
/// loaded, so it runs before the driver's own exit handlers.
void watch_process_exit();
/// True once exit() has begun: destructors then leave CUDA objects to the OS.
bool process_exiting() noexcept;

}  // namespace vgpu::cuda
