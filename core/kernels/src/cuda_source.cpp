// SPDX-License-Identifier: Apache-2.0
// core/kernels/src/cuda_source.cpp — the built-in CUDA kernels (core/kernels/cuda/*.cu, CUDA C ports
// of core/kernels/glsl/*.comp), embedded at build time. Each entry takes one pointer per
// binding slot (ascending slot order) and then its params struct by value; the linear group of
// a 1-D problem spread over x and y is blockIdx.x + blockIdx.y * gridDim.x.
#include "vgpu/kernels/cuda_source.hpp"

#include <string>

#include "vgpu/error.hpp"

namespace vgpu::kernels {
namespace {

// Generated at build time by cmake/VgpuEmbedCuda.cmake from core/kernels/cuda/: defines
// kBuiltinCuda[] with each file's exact bytes as a raw string literal.
#include "vgpu_cuda_embedded.inc"

}  // namespace

const std::vector<BuiltinCuda>& builtin_cuda_kernels() {
  // Leaked: first read by a background calibration maybe (vgpu/backend/exit_order.hpp).
  static const auto* all = new std::vector<BuiltinCuda>(std::begin(kBuiltinCuda), std::end(kBuiltinCuda));
  return *all;
}

const BuiltinCuda& builtin_cuda(std::string_view name) {
  for (const auto& k : builtin_cuda_kernels())
    if (k.name == name) return k;
  fail(ErrorCategory::internal, "there is no built-in CUDA kernel '" + std::string(name) + "'.",
       "report this as a vgpu bug.");
}

}  // namespace vgpu::kernels
