// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/cpu_op_tuner.cpp — the CPU built-ins' work per group (one TBB task each).
#include "cpu_op_tuner.hpp"

#include <string>

#include "kernels/cpu_tiles.hpp"
#include "vgpu/error.hpp"

namespace vgpu::cpu {
namespace {

// The work one CPU "workgroup" (one task, a single invocation walking its tile or chunk)
// covers per op: x elements or C columns, y C rows. softmax_rows: one task per row.
struct Row {
  std::string_view op;
  std::uint64_t per_x, per_y;
};

constexpr Row kRows[] = {{"matmul", kMatmulTileN, kMatmulTileM}, {"axpy", kElementsPerGroup, 1},
                         {"add", kElementsPerGroup, 1},          {"mul", kElementsPerGroup, 1},
                         {"reduce_sum", kReduceBlock, 1},       {"softmax_rows", 1, 1}};

class CpuOpTuner final : public OpTuner {
 public:
  OpTuning tune(const OpShape& shape, const DeviceInfo& /*device*/) const override {
    for (const Row& r : kRows) {
      if (r.op != shape.op) continue;
      OpTuning t;
      t.options.workgroup_size = {1, 1, 1};
      t.per_group_x = r.per_x;
      t.per_group_y = r.per_y;
      return t;
    }
    fail(ErrorCategory::not_supported, "the CPU backend has no built-in op '" + std::string(shape.op) + "'.",
         "use one of vgpu::ops::names().");
  }
};

}  // namespace

std::shared_ptr<const OpTuner> cpu_op_tuner() {
  static const auto tuner = std::make_shared<const CpuOpTuner>();
  return tuner;
}

}  // namespace vgpu::cpu
