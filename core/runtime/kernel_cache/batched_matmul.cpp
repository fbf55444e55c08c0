// SPDX-License-Identifier: Apache-2.0
// core/runtime/kernel_cache/batched_matmul.cpp — np.matmul's batch broadcasting and the
// one-launch plan of a stack of products.
#include "batched_matmul.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "builtin_plans.hpp"
#include "device_core.hpp"
#include "vgpu/backend/op_tuning.hpp"
#include "vgpu/error.hpp"
#include "vgpu/kernels/kernel_abi.hpp"

namespace vgpu::detail {
namespace {

using kernels::MatmulBatchParams;
using std::to_string;
using vgpu::to_string;

constexpr std::uint64_t kMaxElements = std::numeric_limits<std::uint32_t>::max();  // GLSL's 32-bit indices

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

// operand's batch dimension d of batch's nb, aligned from the right (1 where it has none).
std::uint64_t batch_dim(const Shape& operand, std::size_t nb, std::size_t d) {
  const std::size_t ob = operand.size() - 2;
  return d < nb - ob ? 1 : operand[d - (nb - ob)];
}

// Consecutive batch dimensions that A and B both walk, or that one walks and the other repeats
// across, merged: within a run each operand's matrices are one row-major block (stride in
// matrices; 0 for the operand that repeats).
struct Run {
  std::uint64_t size = 1, a_stride = 0, b_stride = 0;
  bool in_a = false, in_b = false;
};

std::vector<Run> batch_runs(const Shape& a, const Shape& b, const Shape& batch) {
  const std::size_t nb = batch.size();
  std::vector<std::uint64_t> sa(nb), sb(nb);  // each operand's own row-major stride per dimension
  std::uint64_t ra = 1, rb = 1;
  for (std::size_t d = nb; d-- > 0;) {
    sa[d] = ra;
    sb[d] = rb;
    ra *= batch_dim(a, nb, d);
    rb *= batch_dim(b, nb, d);
  }
  std::vector<Run> runs;
  for (std::size_t d = 0; d < nb; ++d) {
    if (batch[d] == 1) continue;  // adds nothing to any index
    const bool in_a = batch_dim(a, nb, d) == batch[d], in_b = batch_dim(b, nb, d) == batch[d];
    if (runs.empty() || runs.back().in_a != in_a || runs.back().in_b != in_b) runs.push_back(Run{1, 0, 0, in_a, in_b});
    Run& r = runs.back();
    r.size *= batch[d];
    r.a_stride = in_a ? sa[d] : 0;  // the innermost dimension's stride steps the merged run
    r.b_stride = in_b ? sb[d] : 0;
  }
  return runs;
}

std::uint32_t u32(std::uint64_t v) { return static_cast<std::uint32_t>(v); }  // checked by the caller

// The bytes a batched step reads or writes of one operand, from its params and groups alone
// (bindings are checked per dispatch, and kernels differing only here share one L1 entry):
// the last product's matrix of C, and for A and B the largest matrix index the launch can
// reach, that of its last outer index and the last inner one (a whole row of inner indices
// exists for every outer index the launch touches).
std::uint64_t operand_bytes(int which, std::uint64_t elem, const ParamsBlock& pb, const Groups& g) {
  const auto q = pb.as<MatmulBatchParams>();
  const std::uint64_t last = std::uint64_t{q.first} + std::max<std::uint32_t>(g.z, 1) - 1;
  std::uint64_t index = 0, matrix = 0;
  if (which == 2) {
    index = q.c_base + last;
    matrix = std::uint64_t{q.m} * q.n;
  } else {
    const std::uint64_t base = which == 0 ? q.a_base : q.b_base, outer = which == 0 ? q.a_outer : q.b_outer,
                        inner = which == 0 ? q.a_inner : q.b_inner;
    index = base + (last / q.inner) * outer + (q.inner - 1) * inner;
    matrix = which == 0 ? std::uint64_t{q.m} * q.k : std::uint64_t{q.k} * q.n;
  }
  return (index + 1) * matrix * elem;
}

}  // namespace

Shape broadcast_batch(const Shape& a, const Shape& b, const Shape& shown_a, const Shape& shown_b) {
  const std::size_t nb = std::max(a.size(), b.size()) - 2;
  Shape batch(nb, 1);
  for (std::size_t d = 0; d < nb; ++d) {
    const std::uint64_t x = batch_dim(a, nb, d), y = batch_dim(b, nb, d);
    if (x != y && x != 1 && y != 1)
      fail(ErrorCategory::invalid_argument,
           "matmul: the batch dimensions of A " + to_string(shown_a) + " and B " + to_string(shown_b) +
               " do not broadcast (" + to_string(x) + " against " + to_string(y) + ").",
           "give the stacks equal batch dimensions, or 1 where one should repeat (numpy's broadcasting).");
    batch[d] = x == 1 ? y : x;
  }
  return batch;
}

std::uint64_t stack_index(const Shape& operand, const Shape& batch, std::uint64_t i) {
  const std::size_t ob = operand.size() - 2;
  std::uint64_t index = 0, stride = 1;
  for (std::size_t d = batch.size(); d-- > 0;) {
    const std::uint64_t coord = i % batch[d];
    i /= batch[d];
    const std::size_t from_right = batch.size() - 1 - d;
    if (from_right >= ob) continue;
    const std::uint64_t dim = operand[ob - 1 - from_right];
    if (dim != 1) index += coord * stride;
    stride *= dim;
  }
  return index;
}

std::optional<KernelPlan> batched_matmul_plan(const Device& device, const Shape& a, const Shape& b, DType dtype,
                                              bool tf32) {
  const Shape batch = broadcast_batch(a, b, a, b);
  const std::uint64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  const std::uint64_t a_count = element_count(Shape(a.begin(), a.end() - 2));
  const std::uint64_t b_count = element_count(Shape(b.begin(), b.end() - 2));
  const std::uint64_t c_count = element_count(batch);
  // Every index the kernels form stays in 32 bits (and so do m, k and n).
  if (a_count * m * k > kMaxElements || b_count * k * n > kMaxElements || c_count * m * n > kMaxElements)
    return std::nullopt;
  const DeviceInfo& dev = device.info();
  DeviceCore& core = DeviceAccess::core(device);
  OpTuning t = matmul_tuning(dev, core.op_tuner().get(), &core, u32(m), u32(k), u32(n), dtype, tf32);
  if (t.max_k_slice != 0 && k > t.max_k_slice) return std::nullopt;  // z is the product, not a K slice
  const std::uint64_t gx = ceil_div(n, t.per_group_x), gy = ceil_div(m, t.per_group_y);
  if (gx > dev.limits.max_workgroup_count[0] || gy > dev.limits.max_workgroup_count[1]) return std::nullopt;

  KernelPlan p;
  // A variant native to a 16-bit dtype (or multiplying in TF32) reads the arguments as they are,
  // with its own code; the others are float32's (the caller converts around them).
  const bool own_code = t.native_dtype || t.tf32;
  const DType tensors = t.native_dtype ? dtype : DType::f32;
  if (own_code) {
    p.source.name = "vgpu.matmul_batched";
    p.source.add(std::move(t.batched_code ? *t.batched_code : *t.code));
    p.source.params_size = sizeof(MatmulBatchParams);
  } else {
    p.source = builtin_source("matmul_batched", "matmul", sizeof(MatmulBatchParams), t);
  }
  p.options = std::move(t.options);
  p.options.defines["VGPU_MM_BATCH"] = "1";
  // (elem differs only between sources that differ: a native variant's code is its own.)
  auto need = [elem = std::uint64_t{dtype_size(tensors)}](int which) {
    return [which, elem](const ParamsBlock& pb, const Groups& g) { return operand_bytes(which, elem, pb, g); };
  };
  p.source.bindings = {BindingDecl{0, Access::read, "A", need(0)}, BindingDecl{1, Access::read, "B", need(1)},
                       BindingDecl{2, Access::write, "C", need(2)}};
  p.tensors = {{"A", tensors, {a_count, m, k}, Access::read, false},
               {"B", tensors, {b_count, k, n}, Access::read, false},
               {"C", tensors, {c_count, m, n}, Access::write, false}};

  // The innermost run and the one before it are the launch's (i % inner, i / inner); runs
  // further out, if any, are walked by one launch each with their offsets as bases.
  const std::vector<Run> runs = batch_runs(a, b, batch);
  const Run inner = runs.empty() ? Run{} : runs.back();
  const Run outer = runs.size() < 2 ? Run{} : runs[runs.size() - 2];
  const std::size_t looped = runs.size() < 2 ? 0 : runs.size() - 2;
  std::uint64_t launches = 1;
  for (std::size_t r = 0; r < looped; ++r) launches *= runs[r].size;
  const std::uint64_t per_launch = inner.size * outer.size;
  const std::uint64_t zmax = std::max<std::uint32_t>(dev.limits.max_workgroup_count[2], 1);
  for (std::uint64_t l = 0; l < launches; ++l) {
    std::uint64_t a_base = 0, b_base = 0, rest = l;
    for (std::size_t r = looped; r-- > 0;) {
      const std::uint64_t coord = rest % runs[r].size;
      rest /= runs[r].size;
      a_base += coord * runs[r].a_stride;
      b_base += coord * runs[r].b_stride;
    }
    for (std::uint64_t first = 0; first < per_launch; first += zmax) {
      PlanStep step;
      step.slot_tensor = {{0, 0}, {1, 1}, {2, 2}};
      step.params = ParamsBlock::of(MatmulBatchParams{
          u32(m), u32(n), u32(k), 0, u32(first), u32(inner.size), u32(outer.a_stride), u32(inner.a_stride),
          u32(outer.b_stride), u32(inner.b_stride), u32(a_base), u32(b_base), u32(l * per_launch), 0, 0, 0});
      step.groups = Groups{u32(gx), u32(gy), u32(std::min(zmax, per_launch - first))};
      p.steps.push_back(std::move(step));
    }
  }
  return p;
}

}  // namespace vgpu::detail
