// SPDX-License-Identifier: Apache-2.0
// core/kernels/gpu_tuning.cpp — the GPU built-ins' workgroup sizes, defines and work per group.
#include "vgpu/kernels/gpu_tuning.hpp"

#include <array>
#include <string>

#include "vgpu/error.hpp"

namespace vgpu::kernels {
namespace {

// One op of core/kernels/glsl (and its CUDA port): workgroup size, the work one group covers
// (x: elements, C columns or a reduce block; y: C rows) and the VGPU_OP value elementwise.comp
// takes (null: none).
struct Row {
  std::string_view op;
  std::array<std::uint32_t, 3> workgroup;
  std::uint64_t per_x, per_y;
  const char* vgpu_op;
};

constexpr Row kRows[] = {
    {"matmul", {16, 16, 1}, 64, 64, nullptr},        // 64×64 C tile, 4×4 per invocation
    {"axpy", {256, 1, 1}, 256, 1, nullptr},
    {"add", {256, 1, 1}, 256, 1, "0"},
    {"mul", {256, 1, 1}, 256, 1, "1"},
    {"reduce_sum", {256, 1, 1}, 256 * 8, 1, nullptr},  // 8 inputs per invocation per pass
    {"softmax_rows", {256, 1, 1}, 1, 1, nullptr},      // one group per row
};

}  // namespace

OpTuning builtin_gpu_tuning(const OpShape& shape) {
  for (const Row& r : kRows) {
    if (r.op != shape.op) continue;
    OpTuning t;
    t.options.workgroup_size = r.workgroup;
    if (r.vgpu_op) t.options.defines["VGPU_OP"] = r.vgpu_op;
    t.per_group_x = r.per_x;
    t.per_group_y = r.per_y;
    return t;
  }
  fail(ErrorCategory::not_supported, "the GPU built-ins have no op '" + std::string(shape.op) + "'.",
       "use one of vgpu::ops::names().");
}

std::shared_ptr<const OpTuner> gpu_builtin_tuner() {
  struct Tuner final : OpTuner {
    OpTuning tune(const OpShape& shape, const DeviceInfo& /*device*/) const override { return builtin_gpu_tuning(shape); }
  };
  static const auto tuner = std::make_shared<const Tuner>();
  return tuner;
}

}  // namespace vgpu::kernels
