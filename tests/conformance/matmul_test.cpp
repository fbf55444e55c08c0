// SPDX-License-Identifier: Apache-2.0
// tests/conformance/matmul_test.cpp — matmul on every device under test, through both the
// PersistentKernel and the raw Device path, against a double-precision reference.
// Tolerance (derived in support/numerics.hpp): |err_ij| ≤ 2·K·eps32·Σ_k |a_ik||b_kj|.
#include "support/catch.hpp"

#include <array>

#include "conformance/conformance.hpp"
#include "support/numerics.hpp"
#include "support/plan_runner.hpp"

namespace vgpu_test {
namespace {

struct MatmulShape {
  std::uint32_t m, k, n;
};

// Runs one M×K·K×N product on device through path and checks every element of C.
void check_matmul(vgpu::Device& device, MatmulShape s, Path path) {
  INFO(device.info().id() << " matmul " << s.m << "x" << s.k << " · " << s.k << "x" << s.n << " via " << to_string(path));
  const auto a = random_floats(std::size_t{s.m} * s.k, std::size_t{s.m} * s.k);
  const auto b = random_floats(std::size_t{s.k} * s.n, std::size_t{s.k} * s.n + 1);
  const Reference ref = matmul_reference(a, b, s.m, s.k, s.n);
  HostTensors args{a, b, std::vector<float>(std::size_t{s.m} * s.n, kNaN)};
  if (path == Path::persistent) {
    // The product path, spelled out as users write it.
    vgpu::PersistentKernel kernel(device, vgpu::ops::matmul(device.info(), s.m, s.k, s.n));
    run_persistent(kernel, args);
    CHECK(kernel.calls() == 2);  // the poison call and the real one
  } else {
    run_raw(device, vgpu::ops::matmul(device.info(), s.m, s.k, s.n), args);
  }
  const Comparison c = compare(args[2], ref);
  INFO(c.describe());
  CHECK(c.ok());
  note_exercised(device);
}

constexpr std::array<Path, 2> kPaths{Path::persistent, Path::raw};

}  // namespace

TEST_CASE("matmul: square sizes match the double-precision reference", "[matmul]") {
  for (vgpu::Device device : devices_under_test())
    for (std::uint32_t n : {1u, 15u, 16u, 17u, 64u, 255u, 300u})
      for (Path path : kPaths) check_matmul(device, {n, n, n}, path);
}

TEST_CASE("matmul: non-square shapes, K = 1 and long K", "[matmul]") {
  const MatmulShape shapes[] = {{17, 300, 5}, {1, 1000, 3}, {255, 1, 255}, {300, 17, 299},
                                {1, 1, 1},    {3, 1, 1},    {1, 64, 1},    {96, 256, 128},
                                // Small tiles (the CPU's unpacked path), narrower and wider than a vector, in multi-tile grids.
                                {200, 9, 4},  {130, 40, 3}, {7, 5, 200},   {19, 20, 21}};
  for (vgpu::Device device : devices_under_test())
    for (const MatmulShape& s : shapes)
      for (Path path : kPaths) check_matmul(device, s, path);
}

TEST_CASE("matmul: a persistent kernel reused with new data gives new results", "[matmul]") {
  // Stale buffers, cached results or a batch recorded against old data would all show here.
  constexpr std::uint32_t m = 17, k = 33, n = 19;
  for (vgpu::Device device : devices_under_test()) {
    INFO(device.info().id());
    vgpu::PersistentKernel kernel(device, vgpu::ops::matmul(device.info(), m, k, n));
    for (std::uint64_t round = 0; round < 4; ++round) {
      INFO("round " << round);
      const auto a = random_floats(m * k, 1000 + round);
      const auto b = random_floats(k * n, 2000 + round);
      std::vector<float> c(m * n, kNaN);
      kernel({vgpu::TensorArg(a.data(), {m, k}), vgpu::TensorArg(b.data(), {k, n}), vgpu::TensorArg(c.data(), {m, n})});
      const Comparison cmp = compare(c, matmul_reference(a, b, m, k, n));
      INFO(cmp.describe());
      CHECK(cmp.ok());
    }
    CHECK(kernel.calls() == 4);
    CHECK(kernel.dispatches() == 4 * kernel.plan().steps.size());
    note_exercised(device);
  }
}

TEST_CASE("matmul: raw Device path with one binding set dispatched repeatedly", "[matmul][raw]") {
  // compile / bind once, then rewrite inputs and dispatch again: the binding set must see
  // the buffers' current contents, and C must be fully overwritten each time.
  constexpr std::uint32_t m = 31, k = 7, n = 45;
  for (vgpu::Device device : devices_under_test()) {
    INFO(device.info().id());
    const vgpu::KernelPlan plan = vgpu::ops::matmul(device.info(), m, k, n);
    REQUIRE(plan.steps.size() == 1);
    vgpu::Kernel kernel = device.compile(plan.source, plan.options);
    REQUIRE(kernel);
    CHECK(kernel.name() == plan.source.name);
    vgpu::Buffer A = device.create_buffer(m * k * 4), B = device.create_buffer(k * n * 4), C = device.create_buffer(m * n * 4);
    vgpu::BindingSet set = device.bind(kernel, {{0, A}, {1, B}, {2, C}});
    for (std::uint64_t round = 0; round < 3; ++round) {
      INFO("round " << round);
      const auto a = random_floats(m * k, 3000 + round), b = random_floats(k * n, 4000 + round);
      const std::vector<float> nan(m * n, kNaN);
      device.write(A, a.data(), a.size() * 4);
      device.write(B, b.data(), b.size() * 4);
      device.write(C, nan.data(), nan.size() * 4);
      device.dispatch(kernel, set, plan.steps[0].params, plan.steps[0].groups);
      std::vector<float> c(m * n, kNaN);
      device.read(C, c.data(), c.size() * 4);
      const Comparison cmp = compare(c, matmul_reference(a, b, m, k, n));
      INFO(cmp.describe());
      CHECK(cmp.ok());
    }
    note_exercised(device);
  }
}

}  // namespace vgpu_test
