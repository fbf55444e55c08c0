// SPDX-License-Identifier: Apache-2.0
// core/kernels/cuda_source.hpp — the built-in kernels in CUDA C (core/kernels/cuda/*.cu), embedded
// in the library for NVRTC; the same files are nvcc's input for the L3 fatbins. Same binding ABI as kernel_abi.hpp; the
// CUDA entry ABI is described in backends/cuda/cuda_device.hpp (one pointer per declared slot, ascending, then the
// params struct by value). Thread-safety: immutable data; safe from any thread.
#pragma once

#include <string_view>
#include <vector>

namespace vgpu::kernels {

/// One built-in CUDA kernel: its file-like name, its extern "C" entry and its source.
struct BuiltinCuda {
  std::string_view name;   ///< "matmul", "axpy", "elementwise", "reduce_sum", "softmax_rows"
  std::string_view entry;  ///< extern "C" __global__ entry point
  std::string_view source;
};

/// Returns every built-in CUDA kernel.
const std::vector<BuiltinCuda>& builtin_cuda_kernels();

/// Returns the built-in CUDA kernel named name; throws Error(internal) when there is none.
const BuiltinCuda& builtin_cuda(std::string_view name);

}  // namespace vgpu::kernels
