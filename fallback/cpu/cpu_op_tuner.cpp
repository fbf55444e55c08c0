// fallback/cpu/cpu_op_tuner.cpp — the CPU built-ins' work per group (one TBB task each).
#include "cpu_op_tuner.hpp"

#include <string>

#include "kernels/cpu_tiles.hpp"
#include "vgpu/error.hpp"

namespace vgpu::cpu {
namespace {

// A CPU "workgroup" is one task: a single invocation whose kernel walks its whole tile or chunk.
class CpuOpTuner final : public OpTuner {
 public:
  OpTuning tune(const OpShape& shape, const DeviceInfo& /*device*/) const override {
    OpTuning t;
    t.options.workgroup_size = {1, 1, 1};
    const std::string_view op = shape.op;
    if (op == "matmul") {
      t.per_group_x = kMatmulTileN;
      t.per_group_y = kMatmulTileM;
    } else if (op == "axpy" || op == "add" || op == "mul") {
      t.per_group_x = kElementsPerGroup;
    } else if (op == "reduce_sum") {
      t.per_group_x = kReduceBlock;
    } else if (op != "softmax_rows") {  // softmax: one task per row
      fail(ErrorCategory::not_supported, "the CPU backend has no built-in op '" + std::string(op) + "'.",
           "use one of vgpu::ops::names().");
    }
    return t;
  }
};

}  // namespace

std::shared_ptr<const OpTuner> cpu_op_tuner() {
  static const auto tuner = std::make_shared<const CpuOpTuner>();
  return tuner;
}

}  // namespace vgpu::cpu
