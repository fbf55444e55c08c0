// SPDX-License-Identifier: Apache-2.0
// backends/cuda/cuda_op_tuner.cpp — the CUDA built-ins' tilings. The CUDA ports
// (core/kernels/cuda/*.cu) mirror the GLSL kernels' block sizes and reduce block, except
// matmul, whose tiling depends on the shape and the GPU.
#include "cuda_op_tuner.hpp"

#include <algorithm>
#include <string>

#include "vgpu/kernels/gpu_tuning.hpp"

namespace vgpu::cuda {
namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

// One tiling of core/kernels/cuda/matmul.cu: BM×BN of C per block, K in steps of BK, TM×TN
// per thread. Every entry is also in cmake/VgpuCuda.cmake's VGPU_CUDA_PRECOMPILED (L3).
struct MatmulTiling {
  std::uint32_t bm, bn, bk, tm, tn;
};

// The largest tile that still gives every SM a block: big tiles do the most work per byte of
// shared memory, but a grid smaller than the GPU leaves SMs idle (1024² with 128×128 tiles is
// 64 blocks for an H200's 132 SMs).
MatmulTiling matmul_tiling(std::uint64_t m, std::uint64_t n, const DeviceInfo& dev) {
  constexpr MatmulTiling kLarge{128, 128, 8, 8, 8}, kWide{128, 64, 8, 8, 4}, kSmall{64, 64, 16, 4, 4};
  const std::uint64_t sms = std::max<std::uint32_t>(dev.compute_units, 1);
  for (const MatmulTiling& c : {kLarge, kWide})
    if (ceil_div(m, c.bm) * ceil_div(n, c.bn) >= sms) return c;
  return kSmall;
}

class CudaOpTuner final : public OpTuner {
 public:
  OpTuning tune(const OpShape& shape, const DeviceInfo& dev) const override {
    if (shape.op != "matmul") return kernels::builtin_gpu_tuning(shape);
    const MatmulTiling c = matmul_tiling(shape.m, shape.n, dev);
    OpTuning t;
    t.per_group_x = c.bn;
    t.per_group_y = c.bm;
    t.options.workgroup_size = {c.bn / c.tn, c.bm / c.tm, 1};
    t.options.defines = {{"VGPU_MM_BM", std::to_string(c.bm)}, {"VGPU_MM_BN", std::to_string(c.bn)},
                         {"VGPU_MM_BK", std::to_string(c.bk)}, {"VGPU_MM_TM", std::to_string(c.tm)},
                         {"VGPU_MM_TN", std::to_string(c.tn)}};
    return t;
  }
};

}  // namespace

std::shared_ptr<const OpTuner> cuda_op_tuner() {
  static const auto tuner = std::make_shared<const CudaOpTuner>();
  return tuner;
}

}  // namespace vgpu::cuda
