// SPDX-License-Identifier: Apache-2.0
// tests/conformance/user_kernel_test.cpp — user kernels: a C++ callable on the CPU backend (the
// same ABI as GPU kernels: buffers by slot, params block, workgroup ids), which every other
// backend must refuse with not_supported; and broken GPU sources, which must fail to compile
// with compile_error rather than crash or run.
#include "support/catch.hpp"

#include <array>
#include <cstdint>

#include "conformance/conformance.hpp"
#include "conformance/junit_report.hpp"
#include "support/expect_error.hpp"
#include "support/kernel_sources.hpp"
#include "support/numerics.hpp"
#include "support/plan_runner.hpp"

namespace vgpu_test {
namespace {

struct ScaleParams {  // 16 bytes: scalars only, like the built-ins' params
  std::uint32_t n;
  float alpha;
  std::uint32_t pad0, pad1;
};

vgpu::RequiredBytesFn n_floats() {
  return [](const vgpu::ParamsBlock& pb, const vgpu::Groups&) -> std::uint64_t {
    return std::uint64_t{pb.as<ScaleParams>().n} * 4;
  };
}

// out[i] = alpha * in[i] + i, one invocation per element; invocations past n do nothing.
vgpu::KernelSource scale_add_index_source() {
  vgpu::KernelSource s;
  s.name = "test.scale_add_index";
  set_cpu(
      s,
      [](const vgpu::CpuWorkgroup& wg) {
        const auto& p = wg.params_as<ScaleParams>();
        const float* in = wg.buffer<const float>(0);
        float* out = wg.buffer<float>(1);
        wg.for_each_invocation([&](const std::array<std::uint32_t, 3>& g, const std::array<std::uint32_t, 3>&) {
          if (g[0] < p.n) out[g[0]] = p.alpha * in[g[0]] + static_cast<float>(g[0]);
        });
      },
      "1");
  s.bindings = {{0, vgpu::Access::read, "in", n_floats()}, {1, vgpu::Access::write, "out", n_floats()}};
  s.params_size = sizeof(ScaleParams);
  return s;
}

// A 2-D kernel that records, per element, its global id and the grid it saw.
vgpu::KernelSource grid_probe_source() {
  vgpu::KernelSource s;
  s.name = "test.grid_probe";
  set_cpu(
      s,
      [](const vgpu::CpuWorkgroup& wg) {
        const auto& p = wg.params_as<ScaleParams>();  // n = width, pad0 = height
        float* ids = wg.buffer<float>(0);
        float* grid = wg.buffer<float>(1);
        wg.for_each_invocation([&](const std::array<std::uint32_t, 3>& g, const std::array<std::uint32_t, 3>& l) {
          if (g[0] >= p.n || g[1] >= p.pad0) return;  // the grid overshoots the image
          ids[g[1] * p.n + g[0]] = static_cast<float>(g[0] + 1000 * g[1]);
          grid[g[1] * p.n + g[0]] =
              static_cast<float>(wg.num_workgroups[0] * 100 + wg.num_workgroups[1] +
                                 (l[0] < wg.workgroup_size[0] && l[1] < wg.workgroup_size[1] ? 0 : 1e6));
        });
      },
      "1");
  auto image = [](const vgpu::ParamsBlock& pb, const vgpu::Groups&) -> std::uint64_t {
    return std::uint64_t{pb.as<ScaleParams>().n} * pb.as<ScaleParams>().pad0 * 4;
  };
  s.bindings = {{0, vgpu::Access::write, "ids", image}, {1, vgpu::Access::write, "grid", image}};
  s.params_size = sizeof(ScaleParams);
  return s;
}

}  // namespace

TEST_CASE("user CPU kernel: a C++ callable runs on cpu, other backends refuse it", "[user]") {
  constexpr std::uint32_t n = 1000;
  for (vgpu::Device device : devices_under_test()) {
    INFO(device.info().id());
    const vgpu::KernelSource source = scale_add_index_source();
    if (device.info().backend != vgpu::BackendKind::cpu) {
      REQUIRE_VGPU_ERROR(not_supported, "test.scale_add_index", device.compile(source));
      note_exercised(device);
      continue;
    }
    const auto in = random_floats(n, n);
    const ScaleParams params{n, 2.5f, 0, 0};
    vgpu::CompileOptions options;
    options.workgroup_size = {64, 1, 1};
    vgpu::Kernel kernel = device.compile(source, options);
    vgpu::Buffer bin = device.create_buffer(n * 4), bout = device.create_buffer(n * 4);
    const std::vector<float> nan(n, kNaN);
    device.write(bin, in.data(), n * 4);
    device.write(bout, nan.data(), n * 4);
    device.dispatch(kernel, device.bind(kernel, {{0, bin}, {1, bout}}), vgpu::ParamsBlock::of(params),
                    vgpu::Groups{(n + 63) / 64, 1, 1});
    std::vector<float> out(n, kNaN);
    device.read(bout, out.data(), n * 4);
    Reference ref;
    for (std::uint32_t i = 0; i < n; ++i) {
      ref.value.push_back(2.5 * in[i] + i);
      ref.bound.push_back(2 * kEps32 * (std::abs(2.5 * in[i]) + i));
    }
    const Comparison c = compare(out, ref);
    INFO(c.describe());
    CHECK(c.ok());

    // The same callable as a user KernelPlan through PersistentKernel.
    vgpu::KernelPlan plan;
    plan.source = source;
    plan.options = options;
    plan.tensors = {{"in", vgpu::DType::f32, {n}, vgpu::Access::read, false},
                    {"out", vgpu::DType::f32, {n}, vgpu::Access::write, false}};
    plan.steps = {vgpu::PlanStep{{{0, 0}, {1, 1}}, vgpu::ParamsBlock::of(params), vgpu::Groups{(n + 63) / 64, 1, 1}}};
    HostTensors args{in, std::vector<float>(n, kNaN)};
    run_raw(device, plan, args);
    CHECK(compare(args[1], ref).ok());
    vgpu::PersistentKernel persistent(device, plan);
    run_persistent(persistent, args);
    CHECK(compare(args[1], ref).ok());
    note_exercised(device);
  }
}

TEST_CASE("user CPU kernel: 2-D workgroups see the right ids and grid", "[user]") {
  constexpr std::uint32_t width = 37, height = 21;  // neither divides the 8×4 workgroup
  for (vgpu::Device device : devices_under_test()) {
    if (device.info().backend != vgpu::BackendKind::cpu) {
      skip_on(device, "a cpu= kernel runs on CPU devices only");
      continue;
    }
    INFO(device.info().id());
    vgpu::CompileOptions options;
    options.workgroup_size = {8, 4, 1};
    vgpu::Kernel kernel = device.compile(grid_probe_source(), options);
    vgpu::Buffer ids = device.create_buffer(width * height * 4), grid = device.create_buffer(width * height * 4);
    const std::vector<float> nan(width * height, kNaN);
    device.write(ids, nan.data(), nan.size() * 4);
    device.write(grid, nan.data(), nan.size() * 4);
    const vgpu::Groups groups{(width + 7) / 8, (height + 3) / 4, 1};  // 5 × 6
    device.dispatch(kernel, device.bind(kernel, {{0, ids}, {1, grid}}),
                    vgpu::ParamsBlock::of(ScaleParams{width, 0, height, 0}), groups);
    std::vector<float> got_ids(nan.size()), got_grid(nan.size());
    device.read(ids, got_ids.data(), got_ids.size() * 4);
    device.read(grid, got_grid.data(), got_grid.size() * 4);
    std::size_t wrong = 0;
    for (std::uint32_t y = 0; y < height; ++y)
      for (std::uint32_t x = 0; x < width; ++x) {
        wrong += got_ids[y * width + x] != static_cast<float>(x + 1000 * y);
        wrong += got_grid[y * width + x] != static_cast<float>(groups.x * 100 + groups.y);
      }
    CHECK(wrong == 0);
    note_exercised(device);
  }
}

TEST_CASE("broken GPU sources fail with compile_error and missing dialects with not_supported", "[user][errors]") {
  vgpu::KernelSource glsl_only;
  glsl_only.name = "test.broken_glsl";
  set_glsl(glsl_only, "void main() { this is not GLSL; }\n");
  vgpu::KernelSource cuda_only;
  cuda_only.name = "test.broken_cuda";
  set_cuda(cuda_only, "extern \"C\" __global__ void broken() { this is not CUDA; }\n", "broken");
  for (vgpu::Device device : devices_under_test()) {
    INFO(device.info().id());
    const auto kind = device.info().backend;
    const bool glsl = kind == vgpu::BackendKind::vulkan || kind == vgpu::BackendKind::opengl;
    const bool cuda = kind == vgpu::BackendKind::cuda;
    if (glsl)
      REQUIRE_VGPU_ERROR(compile_error, "test.broken_glsl", device.compile(glsl_only));
    else
      REQUIRE_VGPU_ERROR(not_supported, "test.broken_glsl", device.compile(glsl_only));
    if (cuda)
      REQUIRE_VGPU_ERROR(compile_error, "test.broken_cuda", device.compile(cuda_only));
    else
      REQUIRE_VGPU_ERROR(not_supported, "test.broken_cuda", device.compile(cuda_only));
    // A failed compile is not cached: asking again fails again (and does not crash).
    if (glsl) REQUIRE_VGPU_ERROR(compile_error, "", device.compile(glsl_only));
    note_exercised(device);
  }
}

}  // namespace vgpu_test
