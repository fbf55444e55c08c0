// SPDX-License-Identifier: Apache-2.0
// core/runtime/kernel_cache/ops.cpp — plans of the built-in ops: kernel source in every dialect vgpu ships,
// binding ABI (core/kernels/kernel_abi.hpp), tensors, and group counts for the chosen device.
// How a device runs each op (workgroup size, defines, tiling) is its backend's OpTuner's call.
#include "vgpu/ops.hpp"

#include <algorithm>
#include <limits>

#include "builtin_plans.hpp"
#include "dtype_plan.hpp"
#include "feature_gate.hpp"
#include "device_core.hpp"
#include "registry.hpp"
#include "variant_choice.hpp"
#include "vgpu/kernels/cuda_source.hpp"
#include "vgpu/kernels/glsl_source.hpp"
#include "vgpu/kernels/gpu_tuning.hpp"
#include "vgpu/kernels/kernel_abi.hpp"
#include "vgpu/backend/op_tuning.hpp"
#include "vgpu/backend_list.hpp"
#include "vgpu/error.hpp"

namespace vgpu::ops {
// ops::to_string(Precision) would hide vgpu's overloads (Shape, BackendKind) from the code here.
using vgpu::to_string;

namespace {

using kernels::ElementwiseParams;
using kernels::MatmulParams;
using kernels::ReduceParams;
using kernels::SoftmaxParams;

constexpr std::uint64_t kFloat = 4;

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

void require_positive(const char* op, const char* what, std::uint64_t v) {
  if (v == 0)
    fail(ErrorCategory::invalid_argument, std::string(op) + ": " + what + " is 0; empty problems have no result.",
         "skip the call when there is no data, or pass sizes ≥ 1.");
}

std::uint32_t to_u32(const char* op, const char* what, std::uint64_t v) {
  require_positive(op, what, v);
  if (v > std::numeric_limits<std::uint32_t>::max())
    fail(ErrorCategory::invalid_argument,
         std::string(op) + ": " + what + " = " + std::to_string(v) + " exceeds the 32-bit index range of the kernels.",
         "split the problem into parts of at most 4294967295 elements.");
  return static_cast<std::uint32_t>(v);
}

using detail::linear_groups;

// Sizes derive from the params only: kernels that differ just in these functions share one
// L1 entry, so a size captured from one plan would wrongly check another's dispatch.
BindingDecl elementwise_decl(std::uint32_t slot, Access access, std::string name, bool scalar) {
  return BindingDecl{slot, access, std::move(name), [scalar](const ParamsBlock& pb, const Groups&) -> std::uint64_t {
                       return scalar ? kFloat : std::uint64_t{pb.as<ElementwiseParams>().n} * kFloat;
                     }};
}

// Throws not_supported when there is no tuner for dev's backend (it runs no built-in ops).
const OpTuner& require_tuner(const DeviceInfo& dev, const OpTuner* tuner, const OpShape& shape) {
  if (tuner) return *tuner;
  std::string others;  // the other backends known, as a VGPU_BACKEND value
  for (const std::string& name : backend_names())
    if (name != to_string(dev.backend)) others += (others.empty() ? "" : ",") + name;
  fail(ErrorCategory::not_supported,
       "built-in op '" + std::string(shape.op) + "' has no implementation for " + dev.id() + ": its backend, " +
           std::string(to_string(dev.backend)) + ", brings no OpTuner and vgpu registers none for it.",
       "run it on another device (VGPU_BACKEND=" + others +
           "), or give the backend an OpTuner (ComputeBackend::op_tuner; docs/adding-a-backend.md).");
}

// Throws internal when a backend's tuning covers no work per group.
void check_tuning(const DeviceInfo& dev, std::string_view op, const OpTuning& t) {
  if (t.per_group_x == 0 || t.per_group_y == 0)
    fail(ErrorCategory::internal,
         "the " + std::string(to_string(dev.backend)) + " backend tuned '" + std::string(op) +
             "' with a workgroup that covers no work.",
         "report this with the output of vgpu-probe.");
}

// The rule registered for dev's backend (the DeviceInfo forms' tuner; registry.hpp).
std::shared_ptr<const OpTuner> rule_of(const DeviceInfo& dev) { return detail::registered_op_tuner(dev.backend); }

// The device's backend's tuning of op at shape (defines, workgroup size, work per group).
OpTuning tune(const DeviceInfo& dev, const OpTuner* tuner, OpShape shape) {
  OpTuning t = require_tuner(dev, tuner, shape).tune(shape, dev);
  check_tuning(dev, shape.op, t);
  return t;
}

KernelPlan elementwise(const char* op, const DeviceInfo& dev, const OpTuner* tuner, std::uint64_t n64, bool is_axpy) {
  const std::uint32_t n = to_u32(op, "n", n64);
  OpTuning t = tune(dev, tuner, OpShape{op, 1, 1, n});
  KernelPlan p;
  p.source = detail::builtin_source(op, is_axpy ? "axpy" : "elementwise", sizeof(ElementwiseParams), t);
  p.options = std::move(t.options);
  if (is_axpy) {
    p.source.bindings = {elementwise_decl(0, Access::read, "a", true), elementwise_decl(1, Access::read, "x", false),
                         elementwise_decl(2, Access::read_write, "y", false)};
    p.tensors = {{"a", DType::f32, {1}, Access::read, false},
                 {"x", DType::f32, {n}, Access::read, false},
                 {"y", DType::f32, {n}, Access::read_write, false}};
  } else {
    p.source.bindings = {elementwise_decl(0, Access::read, "a", false), elementwise_decl(1, Access::read, "b", false),
                         elementwise_decl(2, Access::write, "out", false)};
    p.tensors = {{"a", DType::f32, {n}, Access::read, false},
                 {"b", DType::f32, {n}, Access::read, false},
                 {"out", DType::f32, {n}, Access::write, false}};
  }
  PlanStep step;
  step.slot_tensor = {{0, 0}, {1, 1}, {2, 2}};
  step.params = ParamsBlock::of(ElementwiseParams{n, 0, 0, 0});
  step.groups = linear_groups(op, ceil_div(n, t.per_group_x), dev);
  p.steps.push_back(step);
  return p;
}

}  // namespace

std::vector<std::string> names() {
  return {"matmul", "axpy", "add", "mul", "reduce_sum", "softmax_rows", "matmul_tf32"};
}

const char* to_string(Precision precision) noexcept { return precision == Precision::tf32 ? "tf32" : "highest"; }

Precision parse_precision(const std::string& text) {
  if (text == "highest") return Precision::highest;
  if (text == "tf32") return Precision::tf32;
  fail(ErrorCategory::invalid_argument, "precision '" + text + "' is not a matmul precision.",
       "pass precision=\"highest\" (float32 throughout, the default) or precision=\"tf32\" (TF32 tensor cores "
       "allowed where the GPU has them).");
}

const char* matmul_op(Precision precision) noexcept { return precision == Precision::tf32 ? "matmul_tf32" : "matmul"; }

namespace {

// matmul's plan with tuning t (sizes already checked) on arguments of dtype: float32, or the
// 16-bit dtype a native variant (OpTuning::native_dtype) reads and writes itself; named as the
// op asked for ("vgpu.matmul_tf32" where TF32 was allowed: the result check's tolerance).
KernelPlan matmul_plan(const DeviceInfo& dev, std::uint32_t m, std::uint32_t k, std::uint32_t n, OpTuning t,
                       DType dtype = DType::f32, bool tf32_op = false) {
  check_tuning(dev, "matmul", t);
  const bool own_code = t.native_dtype || t.tf32;
  if (t.native_dtype != (dtype != DType::f32) || (t.tf32 && (dtype != DType::f32 || !tf32_op)) ||
      (own_code && (!t.code || t.split_k != 1 || t.max_k_slice)))
    fail(ErrorCategory::internal,
         "the " + std::string(to_string(dev.backend)) + " backend's matmul variant '" + t.variant +
             "' does not fit a matmul of " + std::string(numpy_name(dtype)) + (tf32_op ? " with TF32 allowed" : "") +
             " (a native or TF32 variant brings its own code, splits no K, and is offered only where asked for).",
         "report this with the output of vgpu-probe.");
  KernelPlan p;
  if (own_code) {  // only the variant's own code reads 16-bit operands or multiplies in TF32
    p.source.add(std::move(*t.code));
    p.source.params_size = sizeof(MatmulParams);
  } else {
    p.source = detail::builtin_source("matmul", "matmul", sizeof(MatmulParams), t);
  }
  p.source.name = tf32_op ? "vgpu.matmul_tf32" : "vgpu.matmul";
  p.options = std::move(t.options);
  const std::uint64_t elem = dtype_size(dtype);
  // Sizes come from the params at dispatch time, so any shape validates against the buffers.
  // C (which 2) holds one partial product per K slice under split-K (pad: the slice length).
  // (elem differs only between sources that differ: a native variant's code is its own.)
  auto need = [elem](int which) {
    return [which, elem](const ParamsBlock& pb, const Groups&) -> std::uint64_t {
      const auto q = pb.as<MatmulParams>();
      const std::uint64_t rows = which == 1 ? q.k : q.m, cols = which == 0 ? q.k : q.n;
      const std::uint64_t slices = which == 2 && q.pad != 0 ? ceil_div(q.k, q.pad) : 1;
      // Checked: 2^31 x 2^31 floats would wrap to 0 bytes, and any buffer would pass.
      return checked_mul(checked_mul(checked_mul(slices, rows, "matmul's buffer size"), cols, "matmul's buffer size"),
                         elem, "matmul's buffer size");
    };
  };
  p.source.bindings = {BindingDecl{0, Access::read, "A", need(0)}, BindingDecl{1, Access::read, "B", need(1)},
                       BindingDecl{2, Access::write, "C", need(2)}};
  p.tensors = {{"A", dtype, {m, k}, Access::read, false},
               {"B", dtype, {k, n}, Access::read, false},
               {"C", dtype, {m, n}, Access::write, false}};
  // Split-K: slices of K (multiples of 16, every GLSL BK) into a scratch tensor of partial
  // products, then a second kernel adds them. Only the GLSL kernel reads the slice length.
  std::uint64_t want = std::clamp<std::uint64_t>(
      t.split_k, 1, std::max<std::uint64_t>(1, std::min<std::uint64_t>(k / 16, dev.limits.max_workgroup_count[2])));
  // On a device that cuts loops short, no slice may be longer than the kernel's loops allow
  // (OpTuning::max_k_slice, a multiple of 16: ceil(k / want) rounded up to 16 stays within it).
  if (t.max_k_slice != 0 && k > t.max_k_slice) {
    const std::uint64_t need = ceil_div(k, t.max_k_slice);
    if (need > dev.limits.max_workgroup_count[2])
      fail(ErrorCategory::invalid_argument,
           "matmul with K = " + std::to_string(k) + " needs " + std::to_string(need) + " slices of K on " + dev.id() +
               " to keep each invocation's loops under its driver's limit of " +
               std::to_string(dev.limits.max_loop_iterations) +
               " iterations (DeviceLimits::max_loop_iterations), more than the " +
               std::to_string(dev.limits.max_workgroup_count[2]) + " workgroups along z it launches.",
           "split K yourself: add the products of A's column blocks and B's row blocks of at most " +
               std::to_string(std::uint64_t{t.max_k_slice} * dev.limits.max_workgroup_count[2]) +
               " each, or run it on a device without a loop limit.");
    want = std::max(want, need);
  }
  const std::uint32_t slice = want > 1 ? static_cast<std::uint32_t>(ceil_div(ceil_div(k, want), 16) * 16) : 0;
  const std::uint32_t slices = slice ? static_cast<std::uint32_t>(ceil_div(k, slice)) : 1;
  if (slices > 1) {
    // The sum's one loop walks the slices; the kernels index the partials with 32-bit words.
    const std::uint64_t budget = kernels::loop_budget(dev);
    if ((budget != 0 && slices + 1 > budget) || std::uint64_t{slices} * m * n > 0xFFFFFFFFull)
      fail(ErrorCategory::invalid_argument,
           "matmul of " + std::to_string(m) + "x" + std::to_string(k) + " by " + std::to_string(k) + "x" +
               std::to_string(n) + " needs " + std::to_string(slices) + " partial products of K slices on " + dev.id() +
               ", more than " +
               (budget != 0 && slices + 1 > budget
                    ? "its driver's loop limit lets one invocation add (DeviceLimits::max_loop_iterations = " +
                          std::to_string(dev.limits.max_loop_iterations) + ")."
                    : std::string("32-bit indices address.")),
           "split the product: K into parts whose products you add, or M and N into blocks.");
  }
  PlanStep step;
  step.slot_tensor = {{0, 0}, {1, 1}, {2, 2}};
  step.params = ParamsBlock::of(MatmulParams{m, n, k, slices > 1 ? slice : 0});
  const std::uint64_t gx = ceil_div(n, t.per_group_x), gy = ceil_div(m, t.per_group_y);
  if (gx > dev.limits.max_workgroup_count[0] || gy > dev.limits.max_workgroup_count[1])
    fail(ErrorCategory::invalid_argument,
         "matmul of " + std::to_string(m) + "x" + std::to_string(n) + " needs more workgroups than " + dev.id() +
             " can launch.",
         "split the product into row or column blocks.");
  step.groups = Groups{static_cast<std::uint32_t>(gx), static_cast<std::uint32_t>(gy), slices};
  if (slices > 1) {
    p.tensors.push_back({"partials", DType::f32, {slices, m, n}, Access::read_write, true});
    step.slot_tensor = {{0, 0}, {1, 1}, {2, 3}};
    PlanKernel reduce;
    reduce.source.name = "vgpu.matmul_splitk_reduce";
    reduce.source.add_glsl(std::string(kernels::builtin_glsl("matmul_splitk_reduce")));
    reduce.source.params_size = sizeof(MatmulParams);
    // Params: {count = m·n, slices}.
    reduce.source.bindings = {
        BindingDecl{0, Access::read, "partials",
                    [](const ParamsBlock& pb, const Groups&) -> std::uint64_t {
                      const auto q = pb.as<MatmulParams>();
                      return checked_mul(checked_mul(q.m, q.n, "matmul's partial products"), kFloat,
                                         "matmul's partial products");
                    }},
        BindingDecl{1, Access::write, "C", [](const ParamsBlock& pb, const Groups&) -> std::uint64_t {
                      return std::uint64_t{pb.as<MatmulParams>().m} * kFloat;
                    }}};
    reduce.options.workgroup_size = {256, 1, 1};
    p.more_kernels.push_back(std::move(reduce));
    p.steps.push_back(step);
    PlanStep sum;
    sum.kernel = 1;
    sum.slot_tensor = {{0, 3}, {1, 2}};
    const std::uint64_t count = std::uint64_t{m} * n;
    if (count > std::numeric_limits<std::uint32_t>::max())  // the reduce kernel counts C's elements in 32 bits
      fail(ErrorCategory::invalid_argument,
           "matmul of " + std::to_string(m) + "x" + std::to_string(n) + " split over K has " + std::to_string(count) +
               " elements of C, past the 32-bit count of the kernel that adds the slices.",
           "split the product into row or column blocks of at most 4294967295 elements of C.");
    sum.params = ParamsBlock::of(MatmulParams{static_cast<std::uint32_t>(count), slices, 0, 0});
    sum.groups = linear_groups("matmul", ceil_div(count, 256), dev);
    p.steps.push_back(sum);
    return p;
  }
  p.steps.push_back(step);
  return p;
}

}  // namespace
}  // namespace vgpu::ops

namespace vgpu::detail {

KernelPlan matmul_plan_in(const DeviceInfo& dev, const OpTuner* tuner, std::uint32_t m, std::uint32_t k,
                          std::uint32_t n, OpTuning t, DType dtype, bool tf32_op) {
  if (dtype == DType::f32 || t.native_dtype) return ops::matmul_plan(dev, m, k, n, std::move(t), dtype, tf32_op);
  return with_dtype(ops::matmul_plan(dev, m, k, n, std::move(t), DType::f32, tf32_op), dtype, dev,
                    ops::require_tuner(dev, tuner, OpShape{"convert", 1, 1, 1}));
}

}  // namespace vgpu::detail

namespace vgpu::ops {
namespace {

// The matmul plan; with core, the variant measured on that open device (variant_choice.hpp).
KernelPlan matmul_on(const DeviceInfo& dev, const OpTuner* tuner, detail::DeviceCore* core, std::uint32_t m,
                     std::uint32_t k, std::uint32_t n, DType dtype = DType::f32, bool tf32_op = false) {
  return detail::matmul_plan_in(dev, tuner, m, k, n, detail::matmul_tuning(dev, tuner, core, m, k, n, dtype, tf32_op),
                                dtype, tf32_op);
}

}  // namespace

KernelPlan matmul(const DeviceInfo& dev, std::uint32_t m, std::uint32_t k, std::uint32_t n) {
  return matmul_on(dev, rule_of(dev).get(), nullptr, m, k, n);
}

KernelPlan matmul(const Device& device, std::uint32_t m, std::uint32_t k, std::uint32_t n) {
  detail::DeviceCore& core = detail::DeviceAccess::core(device);
  return matmul_on(device.info(), core.op_tuner().get(), &core, m, k, n);
}

KernelPlan axpy(const DeviceInfo& dev, std::uint64_t n) {
  return elementwise("axpy", dev, rule_of(dev).get(), n, true);
}
KernelPlan add(const DeviceInfo& dev, std::uint64_t n) { return elementwise("add", dev, rule_of(dev).get(), n, false); }
KernelPlan mul(const DeviceInfo& dev, std::uint64_t n) { return elementwise("mul", dev, rule_of(dev).get(), n, false); }

namespace {

KernelPlan reduce_sum_with(const DeviceInfo& dev, const OpTuner* tuner, std::uint64_t n64) {
  const std::uint32_t n = to_u32("reduce_sum", "n", n64);
  OpTuning t = tune(dev, tuner, OpShape{"reduce_sum", 1, 1, n});
  const std::uint64_t block = t.per_group_x;  // inputs one group sums per pass
  KernelPlan p;
  p.source = detail::builtin_source("reduce_sum", "reduce_sum", sizeof(ReduceParams), t);
  p.options = std::move(t.options);
  auto in_bytes = [](const ParamsBlock& pb, const Groups&) -> std::uint64_t {
    return pb.as<ReduceParams>().n * kFloat;
  };
  auto out_bytes = [block](const ParamsBlock& pb, const Groups&) -> std::uint64_t {
    return ceil_div(pb.as<ReduceParams>().n, block) * kFloat;
  };
  p.source.bindings = {BindingDecl{0, Access::read, "in", in_bytes}, BindingDecl{1, Access::write, "out", out_bytes}};
  p.tensors = {{"x", DType::f32, {n}, Access::read, false}, {"sum", DType::f32, {1}, Access::write, false}};
  // Each pass sums blocks into partials; passes repeat until one value is left.
  std::uint32_t src = 0;
  std::uint64_t count = n;
  for (int pass = 0;; ++pass) {
    const std::uint64_t partials = ceil_div(count, block);
    std::uint32_t dst = 1;
    if (partials > 1) {
      dst = static_cast<std::uint32_t>(p.tensors.size());
      p.tensors.push_back({"partials" + std::to_string(pass), DType::f32, {partials}, Access::read_write, true});
    }
    PlanStep step;
    step.slot_tensor = {{0, src}, {1, dst}};
    step.params = ParamsBlock::of(ReduceParams{static_cast<std::uint32_t>(count), 0, 0, 0});
    step.groups = linear_groups("reduce_sum", partials, dev);
    p.steps.push_back(step);
    if (dst == 1) break;
    src = dst;
    count = partials;
  }
  return p;
}

using kernels::SoftmaxSplitParams;

// softmax_rows.comp's loops per invocation, each counted one more for its exit test (Mesa's
// gallivm counts that too). One group per row: three passes of ⌈cols/256⌉ and two 8-step trees.
std::uint64_t softmax_row_loops(std::uint64_t cols) { return 3 * (ceil_div(cols, 256) + 1) + 2 * 9; }

// The split kernel, the loops of both phases together (a loop in the phase not taken still
// runs once): three passes of ⌈chunk/256⌉, two of ⌈chunks/256⌉ and four trees.
std::uint64_t softmax_split_loops(std::uint64_t chunk, std::uint64_t chunks) {
  return 3 * (ceil_div(chunk, 256) + 1) + 2 * (ceil_div(chunks, 256) + 1) + 4 * 9;
}

// Columns per group of the split kernel at most: 64 per invocation and pass keeps each
// invocation's float sums short and gives a software device's threads many groups.
constexpr std::uint64_t kSoftmaxChunk = 256 * 64;

// softmax_rows for rows longer than one workgroup's loops may walk on dev (loop budget
// budget): softmax_rows.comp's split kernel (VGPU_SOFTMAX_SPLIT) over chunks of each row, two
// dispatches. GLSL only: only devices with a loop limit take it, and those are GLSL devices.
KernelPlan softmax_split(const DeviceInfo& dev, std::uint32_t rows, std::uint32_t cols, std::uint64_t budget,
                         OpTuning t) {
  // The longest chunk (in 256-column steps per invocation) whose loops fit, at most kSoftmaxChunk.
  std::uint64_t per = kSoftmaxChunk / 256, chunks = 0;
  for (;;) {
    if (per == 0)
      fail(ErrorCategory::invalid_argument,
           "softmax_rows of " + std::to_string(rows) + "x" + std::to_string(cols) + " cannot keep its loops under " +
               dev.id() + "'s driver limit of " + std::to_string(dev.limits.max_loop_iterations) +
               " iterations per invocation (DeviceLimits::max_loop_iterations).",
           "run it on a device without a loop limit, or with a limit of at least a few hundred iterations.");
    chunks = ceil_div(cols, per * 256);
    const std::uint64_t cost = softmax_split_loops(per * 256, chunks);
    if (cost <= budget) break;
    const std::uint64_t fixed = cost - 3 * per;  // what does not shrink with the chunk
    per = std::min(per - 1, budget > fixed ? (budget - fixed) / 3 : 0);
  }
  const auto chunk = static_cast<std::uint32_t>(per * 256);
  KernelPlan p;
  p.source.name = "vgpu.softmax_rows_split";
  p.source.add_glsl(std::string(kernels::builtin_glsl("softmax_rows")));
  p.source.params_size = sizeof(SoftmaxSplitParams);
  p.options = std::move(t.options);
  p.options.defines["VGPU_SOFTMAX_SPLIT"] = "1";
  auto bytes = [](const ParamsBlock& pb, const Groups&) -> std::uint64_t {
    const auto q = pb.as<SoftmaxSplitParams>();
    return std::uint64_t{q.rows} * q.cols * kFloat;
  };
  auto stats_bytes = [](const ParamsBlock& pb, const Groups&) -> std::uint64_t {
    const auto q = pb.as<SoftmaxSplitParams>();
    return 2 * std::uint64_t{q.rows} * ceil_div(q.cols, q.chunk) * kFloat;
  };
  p.source.bindings = {BindingDecl{0, Access::read, "x", bytes}, BindingDecl{1, Access::write, "out", bytes},
                       BindingDecl{2, Access::read_write, "stats", stats_bytes}};
  p.tensors = {{"x", DType::f32, {rows, cols}, Access::read, false},
               {"out", DType::f32, {rows, cols}, Access::write, false},
               {"stats", DType::f32, {rows, chunks, 2}, Access::read_write, true}};
  // Phase 0: each chunk's max and sum of exponentials; phase 1: each group combines its row's
  // chunks and writes its own.
  for (std::uint32_t phase : {0u, 1u}) {
    PlanStep step;
    step.slot_tensor = {{0, 0}, {1, 1}, {2, 2}};
    step.params = ParamsBlock::of(SoftmaxSplitParams{rows, cols, chunk, phase});
    step.groups = linear_groups("softmax_rows", std::uint64_t{rows} * chunks, dev);
    p.steps.push_back(step);
  }
  return p;
}

KernelPlan softmax_rows_with(const DeviceInfo& dev, const OpTuner* tuner, std::uint32_t rows, std::uint32_t cols) {
  require_positive("softmax_rows", "rows", rows);
  require_positive("softmax_rows", "cols", cols);
  OpTuning t = tune(dev, tuner, OpShape{"softmax_rows", rows, 1, cols});
  // One workgroup walks a whole row; on a device that cuts loops short, a row too long for
  // that is spread over several.
  const std::uint64_t budget = kernels::loop_budget(dev);
  if (budget != 0 && softmax_row_loops(cols) > budget) return softmax_split(dev, rows, cols, budget, std::move(t));
  KernelPlan p;
  p.source = detail::builtin_source("softmax_rows", "softmax_rows", sizeof(SoftmaxParams), t);
  p.options = std::move(t.options);
  auto bytes = [](const ParamsBlock& pb, const Groups&) -> std::uint64_t {
    const auto q = pb.as<SoftmaxParams>();
    // Checked: 2^31 x 2^31 floats would wrap to 0 bytes, and any buffer would pass.
    return checked_mul(checked_mul(q.rows, q.cols, "softmax_rows's buffer size"), kFloat, "softmax_rows's buffer size");
  };
  p.source.bindings = {BindingDecl{0, Access::read, "x", bytes}, BindingDecl{1, Access::write, "out", bytes}};
  p.tensors = {{"x", DType::f32, {rows, cols}, Access::read, false},
               {"out", DType::f32, {rows, cols}, Access::write, false}};
  PlanStep step;
  step.slot_tensor = {{0, 0}, {1, 1}};
  step.params = ParamsBlock::of(SoftmaxParams{rows, cols, 0, 0});
  step.groups = linear_groups("softmax_rows", ceil_div(rows, t.per_group_y), dev);
  p.steps.push_back(step);
  return p;
}

}  // namespace

KernelPlan reduce_sum(const DeviceInfo& dev, std::uint64_t n) { return reduce_sum_with(dev, rule_of(dev).get(), n); }

KernelPlan softmax_rows(const DeviceInfo& dev, std::uint32_t rows, std::uint32_t cols) {
  return softmax_rows_with(dev, rule_of(dev).get(), rows, cols);
}

void check_shape(const std::string& op, const Shape& shape) {
  auto want = [&](std::size_t dims, const char* form) {
    if (shape.size() != dims)
      fail(ErrorCategory::invalid_argument,
           "op '" + op + "' takes shape " + form + " but got " + to_string(shape) + ".",
           std::string("pass the shape as ") + form + ".");
  };
  if (op == "matmul" || op == "matmul_tf32") return want(3, "{M, K, N}");
  if (op == "softmax_rows") return want(2, "{rows, cols}");
  if (op == "axpy" || op == "add" || op == "mul" || op == "reduce_sum") return want(1, "{n}");
  std::string known;
  for (const auto& n : names()) known += (known.empty() ? "" : ", ") + n;
  fail(ErrorCategory::invalid_argument, "unknown op '" + op + "'.", "use one of: " + known + ".");
}

KernelPlan plan(const std::string& op, const Device& device, const Shape& shape, DType dtype) {
  detail::DeviceCore& core = detail::DeviceAccess::core(device);
  return detail::builtin_plan(op, device.info(), core.op_tuner().get(), shape, &core, dtype);
}

KernelPlan plan(const std::string& op, const DeviceInfo& dev, const Shape& shape, DType dtype) {
  return detail::builtin_plan(op, dev, rule_of(dev).get(), shape, nullptr, dtype);
}

}  // namespace vgpu::ops

namespace vgpu::detail {

// A 1-D count of groups spread over x then y, within the device's limits. Kernels compute the
// linear group x + y*num_x and ignore groups past the end.
Groups linear_groups(const char* op, std::uint64_t count, const DeviceInfo& dev) {
  const std::uint64_t max_x = dev.limits.max_workgroup_count[0];
  const std::uint64_t max_y = dev.limits.max_workgroup_count[1];
  const std::uint64_t x = std::min(count, max_x);
  const std::uint64_t y = (count + x - 1) / x;
  if (y > max_y)
    fail(ErrorCategory::invalid_argument,
         std::string(op) + " needs " + std::to_string(count) + " workgroups, more than " + dev.id() + " can launch.",
         "split the problem into smaller calls.");
  return Groups{static_cast<std::uint32_t>(x), static_cast<std::uint32_t>(y), 1};
}

KernelPlan builtin_plan(const std::string& op, const DeviceInfo& info, const OpTuner* tuner, const Shape& shape,
                        DeviceCore* core, DType dtype) {
  using namespace ops;
  check_shape(op, shape);
  require_builtin_dtype(dtype);
  auto u32 = [&](std::size_t i, const char* what) { return to_u32(op.c_str(), what, shape[i]); };
  // matmul may have variants native to a 16-bit dtype (tensor cores); a plan without one, and
  // every other op, runs its float32 plan between conversion steps (dtype_plan.hpp).
  if (op == "matmul" || op == "matmul_tf32")
    return matmul_on(info, tuner, core, u32(0, "M"), u32(1, "K"), u32(2, "N"), dtype, op == "matmul_tf32");
  if (dtype != DType::f32)
    return with_dtype(builtin_plan(op, info, tuner, shape, core, DType::f32), dtype, info,
                      require_tuner(info, tuner, OpShape{"convert", 1, 1, 1}));
  // The other ops have one variant each: nothing to measure.
  if (op == "softmax_rows") return softmax_rows_with(info, tuner, u32(0, "rows"), u32(1, "cols"));
  if (op == "reduce_sum") return reduce_sum_with(info, tuner, shape[0]);
  return elementwise(op.c_str(), info, tuner, shape[0], op == "axpy");  // add, mul or axpy (check_shape)
}

namespace {
// candidates less those whose code uses a feature that did not pass its truth test on core's
// device (vgpu/feature_check.hpp); all of them without a core to ask (the compile path refuses
// such code there).
std::vector<OpTuning> usable(std::vector<OpTuning> candidates, DeviceCore* core) {
  if (core)
    std::erase_if(candidates,
                  [&](const OpTuning& t) { return !t.feature.empty() && !feature_usable(*core, t.feature); });
  return candidates;
}
}  // namespace

OpTuning matmul_tuning(const DeviceInfo& dev, const OpTuner* tuner, DeviceCore* core, std::uint32_t m, std::uint32_t k,
                       std::uint32_t n, DType dtype, bool tf32) {
  ops::require_positive("matmul", "M", m);
  ops::require_positive("matmul", "K", k);
  ops::require_positive("matmul", "N", n);
  OpShape shape{"matmul", m, k, n, dtype, tf32 && dtype == DType::f32};
  const OpTuner& rule = ops::require_tuner(dev, tuner, shape);
  // Where the backend offers several variants, the measured choice (variant_choice.hpp) picks
  // one: timed once per device and size class, then read from memory or the disk store.
  std::vector<OpTuning> candidates = usable(rule.candidates(shape, dev), core);
  // Native variants all refused (their feature failed its truth test): float32's, between conversions.
  if (candidates.empty() && shape.dtype != DType::f32) {
    shape.dtype = DType::f32;
    candidates = usable(rule.candidates(shape, dev), core);
  }
  if (candidates.empty())
    fail(ErrorCategory::internal,
         "the " + std::string(to_string(dev.backend)) + " backend offered no matmul variant for " + dev.id() + ".",
         "report this with the output of vgpu-probe.");
  // Without a variant native to dtype, a 16-bit matmul runs a float32 variant between
  // conversions whose cost does not depend on the variant: float32's measured choice stands.
  // Likewise TF32 allowed without a TF32 variant is float32's choice.
  const bool native =
      std::any_of(candidates.begin(), candidates.end(), [](const OpTuning& t) { return t.native_dtype; });
  if (!native) shape.dtype = DType::f32;
  if (std::none_of(candidates.begin(), candidates.end(), [](const OpTuning& t) { return t.tf32; })) shape.tf32 = false;
  std::size_t pick = 0;
  if (core && candidates.size() > 1)
    pick = choose_variant(*core, shape, candidates, [&](const OpTuning& t) {
      return matmul_plan_in(dev, tuner, m, k, n, t, shape.dtype, shape.tf32);
    });
  return std::move(candidates[pick]);
}

// Every built-in carries each dialect vgpu ships, so one source runs on any backend (plus the
// backend's own code, when its tuner brings some); the options and group counts are what
// differ per device.
KernelSource builtin_source(const std::string& op, const char* glsl_file, std::uint32_t params_size, OpTuning& t) {
  KernelSource s;
  s.name = "vgpu." + op;
  s.add_cpu_builtin(op);
  s.add_glsl(std::string(kernels::builtin_glsl(glsl_file)));
  const auto& cu = kernels::builtin_cuda(glsl_file);  // the CUDA port has the GLSL file's name
  s.add_cuda(std::string(cu.source), std::string(cu.entry));
  if (t.code) s.add(std::move(*t.code));
  s.params_size = params_size;
  return s;
}

}  // namespace vgpu::detail
