// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/cpu_op_tuner.cpp — the CPU built-ins' work per group (one TBB task each).
#include "cpu_op_tuner.hpp"

#include <string>

#include "kernels/cpu_tiles.hpp"
#include "vgpu/error.hpp"

namespace vgpu::cpu {
namespace {

// The work one CPU "workgroup" (one task, a single invocation walking its tile or chunk)
// covers per op: x elements or C columns, y C rows. softmax_rows: one task per row. matmul: one
// group for the whole product (per_x/per_y 0 here stand for "all of N / all of M"): its kernel
// spreads the product over the threads itself, so that B is packed once per K block and shared
// by every thread instead of once per tile.
struct Row {
  std::string_view op;
  std::uint64_t per_x, per_y;
};

constexpr Row kRows[] = {{"matmul", 0, 0},
                         {"axpy", kElementsPerGroup, 1},
                         {"add", kElementsPerGroup, 1},
                         {"mul", kElementsPerGroup, 1},
                         {"reduce_sum", kReduceBlock, 1},
                         {"softmax_rows", 1, 1},
                         {"convert", kElementsPerGroup, 1}};

class CpuOpTuner final : public OpTuner {
 public:
  OpTuning tune(const OpShape& shape, const DeviceInfo& /*device*/) const override {
    for (const Row& r : kRows) {
      if (r.op != shape.op) continue;
      OpTuning t;
      t.options.workgroup_size = {1, 1, 1};
      t.per_group_x = r.per_x ? r.per_x : (shape.n ? shape.n : 1);
      t.per_group_y = r.per_y ? r.per_y : (shape.m ? shape.m : 1);
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
