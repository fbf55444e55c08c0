// SPDX-License-Identifier: Apache-2.0
// backends/cuda/cuda_nvrtc.hpp — CUDA C → module image with NVRTC. Needs no GPU, so the
// built-in kernels can be compiled in CI on a CPU-only machine.
// Thread-safety: safe from any thread (NVRTC programs are per call).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cuda_loader.hpp"
#include "vgpu/kernel_source.hpp"

namespace vgpu::cuda {

/// Returns the NVRTC options for sm (e.g. 90): -arch=sm_90 when NVRTC supports that SM
/// (a cubin), else -arch=compute_XY for the newest supported SM below it (PTX the driver JITs);
/// *cubin says which. Then VGPU_LOCAL_SIZE_X/Y/Z, -DNAME=VALUE per define and per spec constant
/// (cuda_spec.hpp; throws for one set by id). kernel names the kernel in errors.
std::vector<std::string> nvrtc_options(const NvrtcFns& nvrtc, const std::string& kernel, const CompileOptions& options,
                                       int sm, bool* cubin);

/// Compiles source's CUDA entry (dialect::cuda) for sm and returns the cubin (or NUL-terminated PTX, see
/// nvrtc_options). Throws Error(compile_error) "CUDA kernel '<name>' failed to compile:\n<log>".
std::vector<std::uint8_t> compile_cuda(const NvrtcFns& nvrtc, const KernelSource& source, const CompileOptions& options,
                                       int sm);

}  // namespace vgpu::cuda
