// SPDX-License-Identifier: Apache-2.0
// tests/support/scale_add_kernel.hpp — the "scale-add" user kernel of the backend suite
// (tests/contract/, tests/<backend>_test.cpp) and of vgpu-test-backend-child:
//   out[i] = a[i] * p.scale + b[i]   (slots 0 = a, 1 = b read; 2 = out write;
//                                     params {uint n; float scale; uint pad0, pad1})
// in GLSL (Vulkan, OpenGL), CUDA C and as a C++ callable (CPU), how it is run, and its double
// reference. It is defined once so that a suite and the child compute the same cache key for
// the same device (the cross-process tests check that they agree). No Catch here: the child
// includes it too.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "support/kernel_sources.hpp"
#include "support/numerics.hpp"
#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/vgpu.hpp"

namespace vgpu_test {

/// The params block, as the GLSL VGPU_PARAMS block and the CUDA struct lay it out.
struct ScaleAddParams {
  std::uint32_t n;
  float scale;
  std::uint32_t pad0, pad1;
};

/// The GLSL body (Vulkan and OpenGL compile the same text).
inline const std::string kScaleAddGlsl =
    "VGPU_PARAMS { uint n; float scale; uint pad0; uint pad1; } p;\n"
    "layout(std430, binding = 0) readonly buffer BufA { float a[]; };\n"
    "layout(std430, binding = 1) readonly buffer BufB { float b[]; };\n"
    "layout(std430, binding = 2) writeonly buffer BufOut { float result[]; };\n"
    "\n"
    "void main() {\n"
    "  const uint i = VGPU_LINEAR_GROUP * gl_WorkGroupSize.x + gl_LocalInvocationID.x;\n"
    "  if (i < p.n) result[i] = a[i] * p.scale + b[i];\n"
    "}\n";

/// The CUDA C source; its entry point is "scale_add".
inline const std::string kScaleAddCuda =
    "struct ScaleAddParams { unsigned n; float scale; unsigned pad0, pad1; };\n"
    "extern \"C\" __global__ void scale_add(const float* a, const float* b, float* out, ScaleAddParams p) {\n"
    "  const unsigned i = (blockIdx.x + blockIdx.y * gridDim.x) * blockDim.x + threadIdx.x;\n"
    "  if (i < p.n) out[i] = a[i] * p.scale + b[i];\n"
    "}\n";

/// The CPU callable: one invocation per element, indexed as the GLSL prelude's
/// VGPU_LINEAR_GROUP does (x + y * groups along x), so the same spread() grids work.
inline void scale_add_cpu(const vgpu::CpuWorkgroup& wg) {
  const auto& p = wg.params_as<ScaleAddParams>();
  const float* a = wg.buffer<const float>(0);
  const float* b = wg.buffer<const float>(1);
  float* out = wg.buffer<float>(2);
  const std::uint64_t group = wg.workgroup_id[0] + std::uint64_t{wg.workgroup_id[1]} * wg.num_workgroups[0];
  for (std::uint32_t x = 0; x < wg.workgroup_size[0]; ++x) {
    const std::uint64_t i = group * wg.workgroup_size[0] + x;
    if (i < p.n) out[i] = a[i] * p.scale + b[i];
  }
}

/// The CPU callable's version (part of its cache key): the CPU dialect has no text, so where the
/// GPU dialects vary the text, the CPU varies this.
inline const std::string kScaleAddCpuVersion = "1";

/// How many elements the cross-process tests ask the child to compute.
inline constexpr std::uint32_t kChildN = 1000;

/// Returns the dialect backend compiles the kernel from: CUDA C for cuda, the callable for cpu,
/// else GLSL.
inline std::string_view scale_add_dialect(vgpu::BackendKind backend) {
  if (backend == vgpu::BackendKind::cuda) return vgpu::dialect::cuda;
  if (backend == vgpu::BackendKind::cpu) return vgpu::dialect::cpu;
  return vgpu::dialect::glsl;
}

/// Returns the suites' source text for backend's dialect (kScaleAddCuda, kScaleAddGlsl, or for
/// the CPU the callable's version kScaleAddCpuVersion).
inline const std::string& scale_add_text(vgpu::BackendKind backend) {
  const std::string_view d = scale_add_dialect(backend);
  if (d == vgpu::dialect::cuda) return kScaleAddCuda;
  if (d == vgpu::dialect::cpu) return kScaleAddCpuVersion;
  return kScaleAddGlsl;
}

/// Returns the kernel for backend with text as its GLSL body or CUDA C source (entry
/// "scale_add"), or for the CPU the callable scale_add_cpu with text as its version.
inline vgpu::KernelSource scale_add_source(vgpu::BackendKind backend, const std::string& text) {
  // Only n sizes the buffers: the function must not capture anything (kernel_source.hpp says why).
  auto n_floats = [](const vgpu::ParamsBlock& pb, const vgpu::Groups&) -> std::uint64_t {
    return std::uint64_t{pb.as<ScaleAddParams>().n} * 4;
  };
  vgpu::KernelSource s;
  // The names the three suites have always used, so keys stored by earlier runs stay valid.
  if (backend == vgpu::BackendKind::vulkan)
    s.name = "test.vk_scale_add";
  else if (backend == vgpu::BackendKind::opengl)
    s.name = "test.gl_scale_add";
  else if (backend == vgpu::BackendKind::cuda)
    s.name = "test.cuda_scale_add";
  else
    s.name = "test." + std::string(vgpu::to_string(backend)) + "_scale_add";
  const std::string_view d = scale_add_dialect(backend);
  if (d == vgpu::dialect::cuda)
    set_cuda(s, text, "scale_add");
  else if (d == vgpu::dialect::cpu)
    set_cpu(s, scale_add_cpu, text);
  else
    set_glsl(s, text);
  s.bindings = {{0, vgpu::Access::read, "a", n_floats},
                {1, vgpu::Access::read, "b", n_floats},
                {2, vgpu::Access::write, "out", n_floats}};
  s.params_size = sizeof(ScaleAddParams);
  return s;
}

/// Returns the compile options the child uses: a 64-wide workgroup.
inline vgpu::CompileOptions scale_add_options() {
  vgpu::CompileOptions o;
  o.workgroup_size = {64, 1, 1};
  return o;
}

/// Returns the L2 key the child's kernel (scale_add_text, scale_add_options) has on device.
inline vgpu::cache::KernelKey scale_add_key(const vgpu::DeviceInfo& device) {
  const vgpu::KernelSource s = scale_add_source(device.backend, scale_add_text(device.backend));
  return vgpu::cache::make_kernel_key(s, *s.find(scale_add_dialect(device.backend)), scale_add_options(),
                                      device.fingerprint);
}

/// Returns a 1-D count of groups laid out as x × y (x ≤ 32), so the kernel's linear group index
/// and its "i < n" guard both matter: the grid usually has more groups than elements need.
inline vgpu::Groups spread(std::uint64_t groups) {
  const std::uint64_t x = std::min<std::uint64_t>(groups, 32);
  return vgpu::Groups{static_cast<std::uint32_t>(x), static_cast<std::uint32_t>((groups + x - 1) / x), 1};
}

/// Returns a·scale + b in double with its bound: one multiply and one add, fused or not, stay
/// within 2·eps32·(|a·scale| + |b|) (see axpy_reference in numerics.hpp).
inline Reference scale_add_reference(const std::vector<float>& a, const std::vector<float>& b, float scale) {
  Reference ref;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double as = static_cast<double>(a[i]) * scale;
    ref.value.push_back(as + b[i]);
    ref.bound.push_back(2.0 * kEps32 * (std::abs(as) + std::abs(static_cast<double>(b[i]))));
  }
  return ref;
}

/// What one run of the kernel gave: the n results against the reference, and how many of the
/// guard elements past n lost their sentinel (a write past the end).
struct ScaleAddResult {
  Comparison values;
  std::size_t guard_changed = 0;
  /// Returns whether every result is within its bound and no guard element was written.
  bool ok() const { return values.ok() && guard_changed == 0; }
};

/// Runs kernel (compiled with a wg-wide workgroup) on n seeded random elements through the raw
/// Device API, with 16 guard elements past n in the output, and compares with the reference.
inline ScaleAddResult run_scale_add(vgpu::Device& device, const vgpu::Kernel& kernel, std::uint32_t n,
                                    std::uint32_t wg) {
  constexpr std::uint32_t kGuard = 16;
  constexpr float kSentinel = 12345.0f;
  const auto a = random_floats(n, n), b = random_floats(n, n + 1);
  const float scale = -1.25f;
  vgpu::Buffer ba = device.create_buffer(n * 4ull), bb = device.create_buffer(n * 4ull),
               bo = device.create_buffer((n + kGuard) * 4ull);
  device.write(ba, a.data(), n * 4ull);
  device.write(bb, b.data(), n * 4ull);
  std::vector<float> init(n + kGuard, kNaN);  // NaN: an element never written fails the compare
  std::fill(init.begin() + n, init.end(), kSentinel);
  device.write(bo, init.data(), init.size() * 4);
  device.dispatch(kernel, device.bind(kernel, {{0, ba}, {1, bb}, {2, bo}}),
                  vgpu::ParamsBlock::of(ScaleAddParams{n, scale, 0, 0}), spread((n + wg - 1) / wg));
  std::vector<float> out(n + kGuard, kNaN);
  device.read(bo, out.data(), out.size() * 4);
  ScaleAddResult r;
  r.values = compare(std::vector<float>(out.begin(), out.begin() + n), scale_add_reference(a, b, scale));
  for (std::uint32_t i = n; i < n + kGuard; ++i) r.guard_changed += out[i] != kSentinel;
  return r;
}

}  // namespace vgpu_test
