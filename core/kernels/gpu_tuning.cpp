// core/kernels/gpu_tuning.cpp — the GPU built-ins' workgroup sizes, defines and work per group.
#include "vgpu/kernels/gpu_tuning.hpp"

#include <string>

#include "vgpu/error.hpp"

namespace vgpu::kernels {
namespace {

constexpr std::uint32_t kWorkgroup = 256;        // invocations per group of the 1-D kernels
constexpr std::uint32_t kMatmulTile = 64;        // C tile per group of matmul.comp (16×16 invocations)
constexpr std::uint64_t kReduceBlock = 256 * 8;  // inputs per group of reduce_sum.comp

}  // namespace

OpTuning builtin_gpu_tuning(const OpShape& shape) {
  OpTuning t;
  const std::string_view op = shape.op;
  if (op == "matmul") {
    t.options.workgroup_size = {16, 16, 1};
    t.per_group_x = t.per_group_y = kMatmulTile;
    return t;
  }
  t.options.workgroup_size = {kWorkgroup, 1, 1};
  if (op == "add" || op == "mul") {
    t.options.defines["VGPU_OP"] = op == "add" ? "0" : "1";
    t.per_group_x = kWorkgroup;
  } else if (op == "axpy") {
    t.per_group_x = kWorkgroup;
  } else if (op == "reduce_sum") {
    t.per_group_x = kReduceBlock;
  } else if (op != "softmax_rows") {  // softmax: one group per row
    fail(ErrorCategory::not_supported, "the GPU built-ins have no op '" + std::string(op) + "'.",
         "use one of vgpu::ops::names().");
  }
  return t;
}

std::shared_ptr<const OpTuner> gpu_builtin_tuner() {
  struct Tuner final : OpTuner {
    OpTuning tune(const OpShape& shape, const DeviceInfo& /*device*/) const override { return builtin_gpu_tuning(shape); }
  };
  static const auto tuner = std::make_shared<const Tuner>();
  return tuner;
}

}  // namespace vgpu::kernels
