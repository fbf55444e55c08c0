// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/cpu_op_tuner.cpp — the CPU built-ins' work per group (one TBB task each).
#include "cpu_op_tuner.hpp"

#include <algorithm>
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

// Returns whether device runs the AMX bfloat16 matmul: its kernel set has it and the OS gave
// the process tile data (the backend then lists kAmxMatmulFeature).
bool has_amx_matmul(const DeviceInfo& device) {
  return std::find(device.features.begin(), device.features.end(), kAmxMatmulFeature) != device.features.end();
}

class CpuOpTuner final : public OpTuner {
 public:
  OpTuning tune(const OpShape& shape, const DeviceInfo& device) const override {
    for (const Row& r : kRows) {
      if (r.op != shape.op) continue;
      OpTuning t;
      t.options.workgroup_size = {1, 1, 1};
      t.per_group_x = r.per_x ? r.per_x : (shape.n ? shape.n : 1);
      t.per_group_y = r.per_y ? r.per_y : (shape.m ? shape.m : 1);
      // bfloat16 products on AMX tiles read and write the 16-bit arrays themselves; elsewhere
      // (and in float16, which AMX-BF16 cannot multiply) the float32 kernel between conversions.
      if (shape.op == "matmul" && shape.dtype == DType::bf16 && !shape.tf32 && has_amx_matmul(device)) {
        t.native_dtype = true;
        t.code = DialectSource{std::string(dialect::cpu), {}, "matmul_bf16_amx", {}, {}};
        t.batched_code = DialectSource{std::string(dialect::cpu), {}, "matmul_batched_bf16_amx", {}, {}};
        t.variant = "amx_bf16";
      }
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
