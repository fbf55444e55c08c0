// core/src/ops.cpp — plans of the built-in ops: kernel source per dialect, binding ABI
// (core/kernels/kernel_abi.hpp), tensors, and group counts for the chosen device.
#include "vgpu/ops.hpp"

#include <algorithm>
#include <limits>

#include "core/kernels/cuda_source.hpp"
#include "core/kernels/glsl_source.hpp"
#include "core/kernels/kernel_abi.hpp"
#include "vgpu/error.hpp"

namespace vgpu::ops {
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

// A 1-D count of groups spread over x then y, within the device's limits. Kernels compute the
// linear group x + y*num_x and ignore groups past the end.
Groups linear_groups(const char* op, std::uint64_t count, const DeviceInfo& dev) {
  const std::uint64_t max_x = dev.limits.max_workgroup_count[0];
  const std::uint64_t max_y = dev.limits.max_workgroup_count[1];
  const std::uint64_t x = std::min(count, max_x);
  const std::uint64_t y = ceil_div(count, x);
  if (y > max_y)
    fail(ErrorCategory::invalid_argument,
         std::string(op) + " needs " + std::to_string(count) + " workgroups, more than " + dev.id() + " can launch.",
         "split the problem into smaller calls.");
  return Groups{static_cast<std::uint32_t>(x), static_cast<std::uint32_t>(y), 1};
}

// Sizes derive from the params only: kernels that differ just in these functions share one
// L1 entry, so a size captured from one plan would wrongly check another's dispatch.
BindingDecl elementwise_decl(std::uint32_t slot, Access access, std::string name, bool scalar) {
  return BindingDecl{slot, access, std::move(name), [scalar](const ParamsBlock& pb, const Groups&) -> std::uint64_t {
                       return scalar ? kFloat : std::uint64_t{pb.as<ElementwiseParams>().n} * kFloat;
                     }};
}

// Which implementation of the built-ins a device runs. The CUDA ports (core/kernels/cuda/*.cu)
// mirror the GLSL kernels' block sizes (256) and reduce block, so the non-CPU branches below
// serve both Impl::glsl and Impl::cuda — except matmul, whose CUDA tiling depends on the shape.
enum class Impl { cpu, glsl, cuda };

Impl impl_for(const char* op, const DeviceInfo& dev) {
  switch (dev.backend) {
    case BackendKind::cpu:
    case BackendKind::test: return Impl::cpu;
    case BackendKind::vulkan:
    case BackendKind::opengl: return Impl::glsl;
    case BackendKind::cuda: return Impl::cuda;
    default:
      fail(ErrorCategory::not_supported,
           std::string("built-in op '") + op + "' has no implementation for the " + std::string(to_string(dev.backend)) +
               " backend in this build.",
           "run it on another device (VGPU_BACKEND=vulkan,opengl,cpu).");
  }
}

// Every built-in carries each dialect it has, so one source runs on any backend; the
// specialisation (options) and group counts are what differ per implementation.
KernelSource builtin_source(const std::string& op, const char* glsl_file, std::uint32_t params_size) {
  KernelSource s;
  s.name = "vgpu." + op;
  s.cpu.builtin = op;
  s.cpu.version = "1";
  s.glsl = std::string(kernels::builtin_glsl(glsl_file));
  const auto& cu = kernels::builtin_cuda(glsl_file);  // the CUDA port has the GLSL file's name
  s.cuda = std::string(cu.source);
  s.cuda_entry = std::string(cu.entry);
  s.params_size = params_size;
  return s;
}

constexpr std::uint32_t kGlslWorkgroup = 256;  // invocations per group of the 1-D GLSL kernels
constexpr std::uint32_t kGlslMatmulTile = 64;  // C tile per group of matmul.comp (16×16 invocations)
constexpr std::uint64_t kGlslReduceBlock = 256 * 8;  // inputs per group of reduce_sum.comp

// One tiling of core/kernels/cuda/matmul.cu: BM×BN of C per block, K in steps of BK, TM×TN
// per thread. Every entry is also in cmake/VgpuCuda.cmake's VGPU_CUDA_PRECOMPILED (L3).
struct CudaMatmulConfig {
  std::uint32_t bm, bn, bk, tm, tn;
};

// The largest tile that still gives every SM a block: big tiles do the most work per byte of
// shared memory, but a grid smaller than the GPU leaves SMs idle (1024² with 128×128 tiles is
// 64 blocks for an H200's 132 SMs).
CudaMatmulConfig cuda_matmul_config(std::uint32_t m, std::uint32_t n, const DeviceInfo& dev) {
  constexpr CudaMatmulConfig kLarge{128, 128, 8, 8, 8}, kWide{128, 64, 8, 8, 4}, kSmall{64, 64, 16, 4, 4};
  const std::uint64_t sms = std::max<std::uint32_t>(dev.compute_units, 1);
  for (const CudaMatmulConfig& c : {kLarge, kWide})
    if (ceil_div(m, c.bm) * ceil_div(n, c.bn) >= sms) return c;
  return kSmall;
}

KernelPlan elementwise(const char* op, const DeviceInfo& dev, std::uint64_t n64, bool is_axpy) {
  const Impl impl = impl_for(op, dev);
  const std::uint32_t n = to_u32(op, "n", n64);
  KernelPlan p;
  p.source = builtin_source(op, is_axpy ? "axpy" : "elementwise", sizeof(ElementwiseParams));
  std::uint64_t per_group = kernels::kCpuElementsPerGroup;
  if (impl == Impl::cpu) {
    p.options.workgroup_size = {1, 1, 1};
    p.options.defines["ELEMENTS_PER_GROUP"] = std::to_string(per_group);
  } else {
    per_group = kGlslWorkgroup;
    p.options.workgroup_size = {kGlslWorkgroup, 1, 1};
    if (!is_axpy) p.options.defines["VGPU_OP"] = std::string(op) == "add" ? "0" : "1";
  }
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
  step.groups = linear_groups(op, ceil_div(n, per_group), dev);
  p.steps.push_back(step);
  return p;
}

}  // namespace

std::vector<std::string> names() { return {"matmul", "axpy", "add", "mul", "reduce_sum", "softmax_rows"}; }

KernelPlan matmul(const DeviceInfo& dev, std::uint32_t m, std::uint32_t k, std::uint32_t n) {
  const Impl impl = impl_for("matmul", dev);
  require_positive("matmul", "M", m);
  require_positive("matmul", "K", k);
  require_positive("matmul", "N", n);
  KernelPlan p;
  p.source = builtin_source("matmul", "matmul", sizeof(MatmulParams));
  // Sizes come from the params at dispatch time, so any shape validates against the buffers.
  auto need = [](int which) {
    return [which](const ParamsBlock& pb, const Groups&) -> std::uint64_t {
      const auto q = pb.as<MatmulParams>();
      const std::uint64_t rows = which == 1 ? q.k : q.m, cols = which == 0 ? q.k : q.n;
      return rows * cols * kFloat;
    };
  };
  p.source.bindings = {BindingDecl{0, Access::read, "A", need(0)}, BindingDecl{1, Access::read, "B", need(1)},
                       BindingDecl{2, Access::write, "C", need(2)}};
  std::uint64_t tile_m = kGlslMatmulTile, tile_n = kGlslMatmulTile;
  if (impl == Impl::cpu) {
    tile_m = kernels::kCpuMatmulTileM;
    tile_n = kernels::kCpuMatmulTileN;
    p.options.workgroup_size = {1, 1, 1};
    p.options.defines["TILE_M"] = std::to_string(tile_m);
    p.options.defines["TILE_N"] = std::to_string(tile_n);
  } else if (impl == Impl::cuda) {
    const CudaMatmulConfig c = cuda_matmul_config(m, n, dev);
    tile_m = c.bm;
    tile_n = c.bn;
    p.options.workgroup_size = {c.bn / c.tn, c.bm / c.tm, 1};
    p.options.defines = {{"VGPU_MM_BM", std::to_string(c.bm)}, {"VGPU_MM_BN", std::to_string(c.bn)},
                         {"VGPU_MM_BK", std::to_string(c.bk)}, {"VGPU_MM_TM", std::to_string(c.tm)},
                         {"VGPU_MM_TN", std::to_string(c.tn)}};
  } else {
    p.options.workgroup_size = {16, 16, 1};
  }
  p.tensors = {{"A", DType::f32, {m, k}, Access::read, false},
               {"B", DType::f32, {k, n}, Access::read, false},
               {"C", DType::f32, {m, n}, Access::write, false}};
  PlanStep step;
  step.slot_tensor = {{0, 0}, {1, 1}, {2, 2}};
  step.params = ParamsBlock::of(MatmulParams{m, n, k, 0});
  const std::uint64_t gx = ceil_div(n, tile_n), gy = ceil_div(m, tile_m);
  if (gx > dev.limits.max_workgroup_count[0] || gy > dev.limits.max_workgroup_count[1])
    fail(ErrorCategory::invalid_argument, "matmul of " + std::to_string(m) + "x" + std::to_string(n) +
                                              " needs more workgroups than " + dev.id() + " can launch.",
         "split the product into row or column blocks.");
  step.groups = Groups{static_cast<std::uint32_t>(gx), static_cast<std::uint32_t>(gy), 1};
  p.steps.push_back(step);
  return p;
}

KernelPlan axpy(const DeviceInfo& dev, std::uint64_t n) { return elementwise("axpy", dev, n, true); }
KernelPlan add(const DeviceInfo& dev, std::uint64_t n) { return elementwise("add", dev, n, false); }
KernelPlan mul(const DeviceInfo& dev, std::uint64_t n) { return elementwise("mul", dev, n, false); }

KernelPlan reduce_sum(const DeviceInfo& dev, std::uint64_t n64) {
  const Impl impl = impl_for("reduce_sum", dev);
  const std::uint32_t n = to_u32("reduce_sum", "n", n64);
  const std::uint64_t block = impl == Impl::cpu ? kernels::kCpuReduceBlock : kGlslReduceBlock;
  KernelPlan p;
  p.source = builtin_source("reduce_sum", "reduce_sum", sizeof(ReduceParams));
  auto in_bytes = [](const ParamsBlock& pb, const Groups&) -> std::uint64_t { return pb.as<ReduceParams>().n * kFloat; };
  auto out_bytes = [block](const ParamsBlock& pb, const Groups&) -> std::uint64_t {
    return ceil_div(pb.as<ReduceParams>().n, block) * kFloat;
  };
  p.source.bindings = {BindingDecl{0, Access::read, "in", in_bytes}, BindingDecl{1, Access::write, "out", out_bytes}};
  p.options.workgroup_size = {impl == Impl::cpu ? 1u : kGlslWorkgroup, 1, 1};
  if (impl == Impl::cpu) p.options.defines["BLOCK"] = std::to_string(block);
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

KernelPlan softmax_rows(const DeviceInfo& dev, std::uint32_t rows, std::uint32_t cols) {
  const Impl impl = impl_for("softmax_rows", dev);
  require_positive("softmax_rows", "rows", rows);
  require_positive("softmax_rows", "cols", cols);
  KernelPlan p;
  p.source = builtin_source("softmax_rows", "softmax_rows", sizeof(SoftmaxParams));
  auto bytes = [](const ParamsBlock& pb, const Groups&) -> std::uint64_t {
    const auto q = pb.as<SoftmaxParams>();
    return std::uint64_t{q.rows} * q.cols * kFloat;
  };
  p.source.bindings = {BindingDecl{0, Access::read, "x", bytes}, BindingDecl{1, Access::write, "out", bytes}};
  p.options.workgroup_size = {impl == Impl::cpu ? 1u : kGlslWorkgroup, 1, 1};
  p.tensors = {{"x", DType::f32, {rows, cols}, Access::read, false},
               {"out", DType::f32, {rows, cols}, Access::write, false}};
  PlanStep step;
  step.slot_tensor = {{0, 0}, {1, 1}};
  step.params = ParamsBlock::of(SoftmaxParams{rows, cols, 0, 0});
  step.groups = linear_groups("softmax_rows", rows, dev);
  p.steps.push_back(step);
  return p;
}

void check_shape(const std::string& op, const Shape& shape) {
  auto want = [&](std::size_t dims, const char* form) {
    if (shape.size() != dims)
      fail(ErrorCategory::invalid_argument, "op '" + op + "' takes shape " + form + " but got " + to_string(shape) + ".",
           std::string("pass the shape as ") + form + ".");
  };
  if (op == "matmul") return want(3, "{M, K, N}");
  if (op == "softmax_rows") return want(2, "{rows, cols}");
  if (op == "axpy" || op == "add" || op == "mul" || op == "reduce_sum") return want(1, "{n}");
  std::string known;
  for (const auto& n : names()) known += (known.empty() ? "" : ", ") + n;
  fail(ErrorCategory::invalid_argument, "unknown op '" + op + "'.", "use one of: " + known + ".");
}

KernelPlan plan(const std::string& op, const DeviceInfo& dev, const Shape& shape) {
  check_shape(op, shape);
  auto u32 = [&](std::size_t i, const char* what) { return to_u32(op.c_str(), what, shape[i]); };
  if (op == "matmul") return matmul(dev, u32(0, "M"), u32(1, "K"), u32(2, "N"));
  if (op == "softmax_rows") return softmax_rows(dev, u32(0, "rows"), u32(1, "cols"));
  if (op == "axpy") return axpy(dev, shape[0]);
  if (op == "add") return add(dev, shape[0]);
  if (op == "mul") return mul(dev, shape[0]);
  return reduce_sum(dev, shape[0]);
}

}  // namespace vgpu::ops
