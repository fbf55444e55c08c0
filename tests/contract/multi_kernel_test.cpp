// SPDX-License-Identifier: Apache-2.0
// tests/contract/multi_kernel_test.cpp — plans of several kernels and in-place tensors on every
// backend: a two-pass user reduction (two different kernels, each its own specialisation) runs
// as one PersistentKernel whose steady calls compile, allocate and bind nothing and submit one
// batch; a tensor declared read_write is uploaded and read back in one call (PersistentKernel
// and KernelDatabase::call), and must be passed as mutable data.
#include <numeric>

#include "contract/contract.hpp"
#include "support/expect_error.hpp"
#include "support/kernel_sources.hpp"
#include "vgpu/vgpu.hpp"

namespace vgpu_test::contract {
namespace {

struct CountParams {
  std::uint32_t n, pad0, pad1, pad2;
};
struct ScaleParams {
  std::uint32_t n;
  float scale;
  std::uint32_t pad0, pad1;
};

constexpr std::uint32_t kItems = 4;  // elements each pass-1 invocation sums (its specialisation)

const char* kPass1Glsl = R"(VGPU_PARAMS { uint n; uint pad0; uint pad1; uint pad2; } p;
layout(std430, binding = 0) readonly buffer BufX { float x[]; };
layout(std430, binding = 1) writeonly buffer BufP { float partial[]; };
void main() {
  const uint i = gl_GlobalInvocationID.x;
  const uint first = i * ITEMS;
  if (first >= p.n) return;
  float s = 0.0;
  for (uint k = first; k < min(first + ITEMS, p.n); ++k) s += x[k];
  partial[i] = s;
}
)";
const char* kPass2Glsl = R"(VGPU_PARAMS { uint n; uint pad0; uint pad1; uint pad2; } p;
layout(std430, binding = 0) readonly buffer BufP { float partial[]; };
layout(std430, binding = 1) writeonly buffer BufOut { float result[]; };
void main() {
  if (gl_GlobalInvocationID.x != 0u) return;
  float s = 0.0;
  for (uint k = 0u; k < p.n; ++k) s += partial[k];
  result[0] = s;
}
)";
const char* kReduceCuda = R"(struct CountParams { unsigned n, pad0, pad1, pad2; };
extern "C" __global__ void reduce_pass1(const float* x, float* partial, CountParams p) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned first = i * ITEMS;
  if (first >= p.n) return;
  float s = 0.0f;
  for (unsigned k = first; k < first + ITEMS && k < p.n; ++k) s += x[k];
  partial[i] = s;
}
extern "C" __global__ void reduce_pass2(const float* partial, float* result, CountParams p) {
  if (blockIdx.x * blockDim.x + threadIdx.x != 0) return;
  float s = 0.0f;
  for (unsigned k = 0; k < p.n; ++k) s += partial[k];
  result[0] = s;
}
)";
const char* kScaleGlsl = R"(VGPU_PARAMS { uint n; float scale; uint pad0; uint pad1; } p;
layout(std430, binding = 0) buffer BufV { float v[]; };
void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i < p.n) v[i] *= p.scale;
}
)";
const char* kScaleCuda = R"(struct ScaleParams { unsigned n; float scale; unsigned pad0, pad1; };
extern "C" __global__ void scale_in_place(float* v, ScaleParams p) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < p.n) v[i] *= p.scale;
}
)";

void reduce_pass1_cpu(const vgpu::CpuWorkgroup& wg) {
  const auto& p = wg.params_as<CountParams>();
  const std::uint32_t items = wg.spec("ITEMS", 0u);
  const float* x = wg.buffer<const float>(0);
  float* partial = wg.buffer<float>(1);
  wg.for_each_invocation([&](auto g, auto) {
    const std::uint64_t first = std::uint64_t{g[0]} * items;
    if (first >= p.n) return;
    float s = 0;
    for (std::uint64_t k = first; k < first + items && k < p.n; ++k) s += x[k];
    partial[g[0]] = s;
  });
}

void reduce_pass2_cpu(const vgpu::CpuWorkgroup& wg) {
  const auto& p = wg.params_as<CountParams>();
  if (wg.workgroup_id[0] != 0) return;
  const float* partial = wg.buffer<const float>(0);
  float s = 0;
  for (std::uint32_t k = 0; k < p.n; ++k) s += partial[k];
  wg.buffer<float>(1)[0] = s;
}

void scale_in_place_cpu(const vgpu::CpuWorkgroup& wg) {
  const auto& p = wg.params_as<ScaleParams>();
  float* v = wg.buffer<float>(0);
  wg.for_each_invocation([&](auto g, auto) {
    if (g[0] < p.n) v[g[0]] *= p.scale;
  });
}

/// A kernel of name in backend's dialect: GLSL body glsl, CUDA entry of cuda_text, or cpu.
vgpu::PlanKernel kernel_for(const Backend& backend, const std::string& name, const char* glsl, const char* cuda_text,
                            const std::string& cuda_entry, vgpu::CpuKernelFn cpu) {
  vgpu::PlanKernel k;
  k.source.name = name;
  if (backend.kind == vgpu::BackendKind::cuda)
    set_cuda(k.source, cuda_text, cuda_entry);
  else if (backend.kind == vgpu::BackendKind::cpu)
    set_cpu(k.source, std::move(cpu), "1");
  else
    set_glsl(k.source, glsl);
  k.source.params_size = 16;
  return k;
}

/// The two-pass reduction of n floats: pass 1 (64 wide; ITEMS = 4 as a define, or a spec
/// constant for CUDA and the CPU) writes one partial sum per invocation, pass 2 (32 wide, one
/// group) sums them.
vgpu::KernelPlan reduction_plan(const Backend& backend, std::uint32_t n) {
  const std::uint32_t partials = (n + kItems - 1) / kItems;
  vgpu::PlanKernel pass1 =
      kernel_for(backend, "test.reduce_pass1", kPass1Glsl, kReduceCuda, "reduce_pass1", reduce_pass1_cpu);
  pass1.source.bindings = {{0, vgpu::Access::read, "x", {}}, {1, vgpu::Access::write, "partial", {}}};
  pass1.options.workgroup_size = {64, 1, 1};
  if (backend.kind == vgpu::BackendKind::cuda || backend.kind == vgpu::BackendKind::cpu)
    pass1.options.specialize("ITEMS", kItems);
  else
    pass1.options.defines["ITEMS"] = std::to_string(kItems) + "u";
  vgpu::PlanKernel pass2 =
      kernel_for(backend, "test.reduce_pass2", kPass2Glsl, kReduceCuda, "reduce_pass2", reduce_pass2_cpu);
  pass2.source.bindings = {{0, vgpu::Access::read, "partial", {}}, {1, vgpu::Access::write, "sum", {}}};
  pass2.options.workgroup_size = {32, 1, 1};
  // One .cu text holds both entries, and NVRTC compiles all of it for either: pass 2 needs
  // pass 1's ITEMS too.
  if (backend.kind == vgpu::BackendKind::cuda) pass2.options.specialize("ITEMS", kItems);

  vgpu::KernelPlan plan;
  plan.source = pass1.source;
  plan.options = pass1.options;
  plan.more_kernels.push_back(pass2);
  plan.tensors = {{"x", vgpu::DType::f32, {n}, vgpu::Access::read, false},
                  {"sum", vgpu::DType::f32, {1}, vgpu::Access::write, false},
                  {"partials", vgpu::DType::f32, {partials}, vgpu::Access::read_write, true}};
  vgpu::PlanStep s1;
  s1.slot_tensor = {{0, 0}, {1, 2}};
  s1.params = vgpu::ParamsBlock::of(CountParams{n, 0, 0, 0});
  s1.groups = vgpu::Groups{(partials + 63) / 64};
  vgpu::PlanStep s2;
  s2.kernel = 1;
  s2.slot_tensor = {{0, 2}, {1, 1}};
  s2.params = vgpu::ParamsBlock::of(CountParams{partials, 0, 0, 0});
  s2.groups = vgpu::Groups{1};
  plan.steps = {s1, s2};
  return plan;
}

/// Small integers, so every partial and total sum is exact in float.
std::vector<float> small_ints(std::uint32_t n, std::uint32_t seed) {
  std::vector<float> v(n);
  for (std::uint32_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 7 + seed) % 13) - 6.0f;
  return v;
}

vgpu::KernelPlan scale_plan(const Backend& backend, std::uint32_t n, float scale) {
  vgpu::PlanKernel k =
      kernel_for(backend, "test.scale_in_place", kScaleGlsl, kScaleCuda, "scale_in_place", scale_in_place_cpu);
  vgpu::KernelPlan plan;
  plan.source = k.source;
  plan.source.bindings = {{0, vgpu::Access::read_write, "v", {}}};
  plan.options.workgroup_size = {64, 1, 1};
  plan.tensors = {{"v", vgpu::DType::f32, {n}, vgpu::Access::read_write, false}};
  vgpu::PlanStep step;
  step.slot_tensor = {{0, 0}};
  step.params = vgpu::ParamsBlock::of(ScaleParams{n, scale, 0, 0});
  step.groups = vgpu::Groups{(n + 63) / 64};
  plan.steps = {step};
  return plan;
}

}  // namespace

CONTRACT_CASE("plans: a two-pass reduction of two kernels is one PersistentKernel, steady calls build nothing",
              "[plan][multi_kernel]", every_backend) {
  vgpu::Device device = open_device(backend);
  for (std::uint32_t n : {1u, 255u, 1000u, 4097u}) {
    INFO("n = " << n);
    const vgpu::KernelPlan plan = reduction_plan(backend, n);
    vgpu::PersistentKernel kernel(device, plan);
    CHECK(kernel.kernel(0).name() == "test.reduce_pass1");
    CHECK(kernel.kernel(1).name() == "test.reduce_pass2");
    CHECK(kernel.kernel(0).key_hex() != kernel.kernel(1).key_hex());
    CHECK(kernel.kernel(1).workgroup_size() == std::array<std::uint32_t, 3>{32, 1, 1});
    std::vector<float> x = small_ints(n, 1);
    float sum = -1;
    kernel({vgpu::TensorArg(static_cast<const float*>(x.data()), {n}), vgpu::TensorArg(&sum, {1})});
    CHECK(sum == std::accumulate(x.begin(), x.end(), 0.0f));

    const vgpu::CounterSnapshot before = device.counters();
    constexpr std::uint64_t kCalls = 20;
    for (std::uint32_t c = 0; c < kCalls; ++c) {
      x = small_ints(n, c + 2);
      kernel({vgpu::TensorArg(static_cast<const float*>(x.data()), {n}), vgpu::TensorArg(&sum, {1})});
    }
    const vgpu::CounterSnapshot d = device.counters() - before;
    INFO(d.to_string());
    CHECK(d.compiles == 0);
    CHECK(d.source_compiles + d.pipeline_builds == 0);
    CHECK(d.allocations == 0);
    // x moves to new memory each call: a device that runs kernels on the caller's memory (the
    // CPU) binds it, at most once per step and call (the allocator may hand an address out
    // again); the others copy it into the kernel's buffers and bind nothing.
    if (vgpu::Array::uses_host_memory(device))
      CHECK(d.binds <= 2 * kCalls);
    else
      CHECK(d.binds == 0);
    CHECK(d.submits == kCalls);
    CHECK(d.dispatches == 2 * kCalls);
    CHECK(kernel.dispatches() == 2 * (kCalls + 1));
    CHECK(sum == std::accumulate(x.begin(), x.end(), 0.0f));
  }
}

CONTRACT_CASE("plans: a step naming a kernel the plan lacks is refused, naming the step", "[plan][errors]",
              every_backend) {
  vgpu::Device device = open_device(backend);
  vgpu::KernelPlan plan = reduction_plan(backend, 100);
  plan.steps[1].kernel = 2;
  REQUIRE_VGPU_ERROR(invalid_argument, "step 1 (kernel 2) of the plan for 'test.reduce_pass1' runs kernel 2",
                     (void)vgpu::PersistentKernel(device, plan));
  plan = reduction_plan(backend, 100);
  plan.steps[1].slot_tensor = {{0, 2}};  // pass 2's output slot left unbound
  REQUIRE_VGPU_ERROR(invalid_argument, "step 1 (kernel 1, 'test.reduce_pass2') of the plan for 'test.reduce_pass1'",
                     (void)vgpu::PersistentKernel(device, plan));
}

CONTRACT_CASE("in-place tensors: a read_write tensor is uploaded and read back in one call", "[plan][in_place]",
              every_backend) {
  vgpu::Device device = open_device(backend);
  const std::uint32_t n = 1000;
  vgpu::PersistentKernel kernel(device, scale_plan(backend, n, 3.0f));
  std::vector<float> v = small_ints(n, 5);
  const std::vector<float> original = v;
  kernel({vgpu::TensorArg(v.data(), {n})});
  for (std::uint32_t i = 0; i < n; ++i) REQUIRE(v[i] == 3.0f * original[i]);
  kernel({vgpu::TensorArg(v.data(), {n})});  // the results of the last call are the next input
  for (std::uint32_t i = 0; i < n; ++i) REQUIRE(v[i] == 9.0f * original[i]);
  const std::vector<float> before_bad = v;
  REQUIRE_VGPU_ERROR(invalid_argument, "is read and written in place but was passed as read-only",
                     kernel({vgpu::TensorArg(static_cast<const float*>(v.data()), {n})}));
  CHECK(v == before_bad);

  vgpu::KernelDatabase db(device);
  db.add("test.scale_in_place", [&backend](const vgpu::DeviceInfo&, const vgpu::Shape& shape) {
    return scale_plan(backend, static_cast<std::uint32_t>(shape.at(0)), -0.5f);
  });
  std::vector<float> w = small_ints(300, 9);
  const std::vector<float> w0 = w;
  const vgpu::TensorArg arg(w.data(), {300});
  db.call("test.scale_in_place", {300}, std::span<const vgpu::TensorArg>(&arg, 1));
  for (std::uint32_t i = 0; i < 300; ++i) REQUIRE(w[i] == -0.5f * w0[i]);
}

}  // namespace vgpu_test::contract
