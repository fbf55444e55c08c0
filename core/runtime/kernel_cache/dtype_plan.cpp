// SPDX-License-Identifier: Apache-2.0
// core/runtime/kernel_cache/dtype_plan.cpp — f16/bf16 plans: an op's float32 plan between
// conversion steps (dtype_plan.hpp).
#include "dtype_plan.hpp"

#include <string>
#include <utility>

#include "builtin_plans.hpp"
#include "vgpu/backend/op_tuning.hpp"
#include "vgpu/error.hpp"
#include "vgpu/kernels/cuda_source.hpp"
#include "vgpu/kernels/glsl_source.hpp"
#include "vgpu/kernels/kernel_abi.hpp"

namespace vgpu::detail {
namespace {

using kernels::ConvertParams;

// The conversion kernel one way (narrow: float32 → 16 bits), tuned as tuner's "convert".
PlanKernel convert_kernel(bool narrow, OpTuning& t) {
  PlanKernel k;
  k.source.name = narrow ? "vgpu.convert_narrow" : "vgpu.convert_widen";
  k.source.add_cpu_builtin(narrow ? "convert_narrow" : "convert_widen");
  k.source.add_glsl(std::string(kernels::builtin_glsl("convert")));
  const auto& cu = kernels::builtin_cuda("convert");
  k.source.add_cuda(std::string(cu.source), std::string(cu.entry));
  k.source.params_size = sizeof(ConvertParams);
  // Sizes come from the params (n), so one compiled kernel serves every length.
  auto bytes = [](std::uint64_t width) {
    return [width](const ParamsBlock& pb, const Groups&) -> std::uint64_t {
      return std::uint64_t{pb.as<ConvertParams>().n} * width;
    };
  };
  k.source.bindings = {BindingDecl{0, Access::read, "in", bytes(narrow ? 4 : 2)},
                       BindingDecl{1, narrow ? Access::read_write : Access::write, "out", bytes(narrow ? 2 : 4)}};
  k.options = t.options;
  k.options.defines["VGPU_CONVERT_NARROW"] = narrow ? "1" : "0";
  return k;
}

}  // namespace

bool builtin_ops_compute_in(DType dtype) noexcept {
  return dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16;
}

void require_builtin_dtype(DType dtype) {
  if (!builtin_ops_compute_in(dtype))
    fail(
        ErrorCategory::not_supported,
        "the built-in ops compute on float32, float16 and bfloat16 arrays, not " + std::string(numpy_name(dtype)) + ".",
        "convert the arrays to one of those dtypes first (numpy: x.astype(numpy.float32)).");
}

KernelPlan with_dtype(KernelPlan plan, DType dtype, const DeviceInfo& dev, const OpTuner& tuner) {
  require_builtin_dtype(dtype);
  if (dtype == DType::f32) return plan;
  const std::uint32_t format = dtype == DType::f16 ? kernels::kConvertF16 : kernels::kConvertBf16;
  const auto first_convert = static_cast<std::uint32_t>(plan.kernel_count());
  OpTuning widen_t = tuner.tune(OpShape{"convert", 1, 1, 1}, dev);
  OpTuning narrow_t = widen_t;
  plan.more_kernels.push_back(convert_kernel(false, widen_t));
  plan.more_kernels.push_back(convert_kernel(true, narrow_t));
  const std::uint64_t per_group = widen_t.per_group_x ? widen_t.per_group_x : 1;

  // Every argument tensor becomes dtype, and gets a float32 scratch twin the op's steps use.
  const std::size_t count = plan.tensors.size();
  std::vector<std::uint32_t> twin(count, 0);
  for (std::uint32_t i = 0; i < count; ++i) {
    TensorSpec& t = plan.tensors[i];
    if (t.scratch) continue;
    if (t.dtype != DType::f32)
      fail(ErrorCategory::internal, "plan '" + plan.source.name + "' has a non-float32 argument '" + t.name + "'.",
           "report this vgpu bug.");
    twin[i] = static_cast<std::uint32_t>(plan.tensors.size());
    plan.tensors.push_back({t.name + "_f32", DType::f32, t.shape, Access::read_write, true});
    plan.tensors[i].dtype = dtype;
  }
  for (PlanStep& s : plan.steps)
    for (auto& [slot, tensor] : s.slot_tensor)
      if (!plan.tensors[tensor].scratch) tensor = twin[tensor];

  auto convert_step = [&](std::uint32_t tensor, bool narrow) {
    const std::uint64_t n = element_count(plan.tensors[tensor].shape);
    if (n > 0xFFFFFFFFull)
      fail(ErrorCategory::invalid_argument,
           "a " + std::string(numpy_name(dtype)) + " argument of " + std::to_string(n) +
               " elements is past the 32-bit count of the conversion kernels.",
           "split the problem into parts of at most 4294967295 elements.");
    PlanStep s;
    s.kernel = first_convert + (narrow ? 1 : 0);
    s.slot_tensor = narrow ? std::vector<std::pair<std::uint32_t, std::uint32_t>>{{0, twin[tensor]}, {1, tensor}}
                           : std::vector<std::pair<std::uint32_t, std::uint32_t>>{{0, tensor}, {1, twin[tensor]}};
    s.params = ParamsBlock::of(ConvertParams{static_cast<std::uint32_t>(n), format, 0, 0});
    s.groups = linear_groups("convert", (n + per_group - 1) / per_group, dev);
    return s;
  };
  std::vector<PlanStep> steps;
  for (std::uint32_t i = 0; i < count; ++i)
    if (twin[i] && plan.tensors[i].access != Access::write) steps.push_back(convert_step(i, false));
  steps.insert(steps.end(), plan.steps.begin(), plan.steps.end());
  for (std::uint32_t i = 0; i < count; ++i)
    if (twin[i] && plan.tensors[i].access != Access::read) steps.push_back(convert_step(i, true));
  plan.steps = std::move(steps);
  return plan;
}

}  // namespace vgpu::detail
