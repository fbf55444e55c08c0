// SPDX-License-Identifier: Apache-2.0
// tests/backends/cpu_matmul_test.cpp — the CPU backend's matmul across threads: one workgroup spreads the
// product over the arena's threads (B packed once per K block and shared, A per task), so the
// task split is checked at 1, 2, 5 and 16 threads (more threads than cores still splits the
// work as a 16-core host would), at awkward shapes (1, 17, 1000, 4097) that leave partial
// micro-panels, tasks and K blocks; any grid a raw dispatch launches covers C exactly once; and a
// product past the time limit stops between K blocks.
#include "support/catch.hpp"

#include <oneapi/tbb/task_arena.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "support/expect_error.hpp"
#include "support/numerics.hpp"
#include "support/plan_runner.hpp"
#include "vgpu/vgpu.hpp"

namespace vgpu_test {
namespace {

struct Shape3 {
  std::uint32_t m, k, n;
};

// Runs m×k · k×n through a PersistentKernel on the CPU inside an arena of `threads` threads and
// checks every element of C against the double-precision reference.
void check_product(vgpu::Device& cpu, Shape3 s, int threads) {
  INFO("cpu matmul " << s.m << "x" << s.k << " · " << s.k << "x" << s.n << " on " << threads << " threads");
  const auto a = random_floats(std::size_t{s.m} * s.k, 11 + s.m);
  const auto b = random_floats(std::size_t{s.k} * s.n, 13 + s.n);
  const Reference ref = matmul_reference(a, b, s.m, s.k, s.n);
  HostTensors args{a, b, std::vector<float>(std::size_t{s.m} * s.n, kNaN)};
  tbb::task_arena arena(threads);
  arena.execute([&] {
    vgpu::PersistentKernel kernel(cpu, vgpu::ops::matmul(cpu.info(), s.m, s.k, s.n));
    run_persistent(kernel, args);
  });
  const Comparison c = compare(args[2], ref);
  INFO(c.describe());
  CHECK(c.ok());
}

TEST_CASE("CPU matmul: awkward shapes give the reference on 1, 2, 5 and 16 threads", "[cpu][matmul]") {
  vgpu::Runtime runtime;
  vgpu::Device cpu = runtime.open("cpu:0");
  // 1 and 17 (partial micro-panels), 1000 (several K blocks, a partial last one; partial
  // tasks), 4097 (one past a power of two, K blocks of 256 plus one) in M, K and N.
  const Shape3 shapes[] = {{1, 1, 1},        {17, 17, 17},    {1, 4097, 17},  {17, 1000, 1},
                           {4097, 17, 1},    {1, 17, 4097},   {1000, 17, 17}, {17, 17, 1000},
                           {257, 1000, 129}, {1000, 1, 1000}, {33, 4097, 65}, {200, 300, 700}};
  for (const int threads : {1, 2, 5, 16})
    for (const Shape3 s : shapes) check_product(cpu, s, threads);
}

TEST_CASE("CPU matmul: products small enough to skip packing give the reference at every column count",
          "[cpu][matmul]") {
  vgpu::Runtime runtime;
  vgpu::Device cpu = runtime.open("cpu:0");
  // Up to 64³ multiply-adds C is computed straight from A and B, two vectors of columns at a
  // time with the last ones overlapping: every column count around one, two and three vectors
  // of SSE (4), AVX2 (8) and AVX-512 (16) lanes, row counts around the 4-row blocks, and the
  // largest such product next to the smallest packed one.
  for (const std::uint32_t n :
       {1u, 3u, 4u, 5u, 7u, 8u, 9u, 12u, 15u, 16u, 17u, 24u, 25u, 31u, 32u, 33u, 40u, 47u, 48u, 49u, 63u, 64u})
    for (const std::uint32_t m : {1u, 3u, 4u, 5u, 6u, 7u, 9u})
      for (const std::uint32_t k : {1u, 2u, 19u}) check_product(cpu, {m, k, n}, 1);
  check_product(cpu, {64, 64, 64}, 1);
  check_product(cpu, {64, 64, 65}, 2);
  check_product(cpu, {63, 65, 64}, 2);
  check_product(cpu, {2, 30000, 3}, 1);
}

TEST_CASE("CPU matmul: 1000 cubed and a 4097-wide product match the reference on 16 threads", "[cpu][matmul]") {
  vgpu::Runtime runtime;
  vgpu::Device cpu = runtime.open("cpu:0");
  check_product(cpu, {1000, 1000, 1000}, 16);
  check_product(cpu, {64, 300, 4097}, 16);
  check_product(cpu, {4097, 300, 64}, 2);
}

TEST_CASE("CPU matmul: any grid of a raw dispatch covers C exactly once", "[cpu][matmul][raw]") {
  vgpu::Runtime runtime;
  vgpu::Device cpu = runtime.open("cpu:0");
  const std::uint32_t m = 130, k = 300, n = 97;
  const auto a = random_floats(std::size_t{m} * k, 5), b = random_floats(std::size_t{k} * n, 6);
  const Reference ref = matmul_reference(a, b, m, k, n);
  vgpu::KernelPlan plan = vgpu::ops::matmul(cpu.info(), m, k, n);
  const vgpu::Kernel kernel = cpu.compile(plan.source, plan.options);
  vgpu::Buffer ba = cpu.create_buffer(a.size() * 4), bb = cpu.create_buffer(b.size() * 4),
               bc = cpu.create_buffer(std::size_t{m} * n * 4);
  cpu.write(ba, a.data(), a.size() * 4);
  cpu.write(bb, b.data(), b.size() * 4);
  const vgpu::BindingSet set = cpu.bind(kernel, {{0, ba}, {1, bb}, {2, bc}});
  // 1×1 (the tuner's), more groups than micro-panels, uneven splits, and a grid larger than C.
  const vgpu::Groups grids[] = {{1, 1, 1}, {3, 5, 1}, {2, 11, 1}, {7, 1, 1}, {40, 40, 1}};
  for (const vgpu::Groups g : grids) {
    INFO("grid " << g.x << "x" << g.y);
    std::vector<float> c(std::size_t{m} * n, kNaN);
    cpu.write(bc, c.data(), c.size() * 4);
    cpu.dispatch(kernel, set, plan.steps.at(0).params, g);
    cpu.synchronize();
    cpu.read(bc, c.data(), c.size() * 4);
    const Comparison cmp = compare(c, ref);
    INFO(cmp.describe());
    CHECK(cmp.ok());
  }
}

TEST_CASE("CPU matmul: a product past the device's time limit stops between K blocks and raises timeout",
          "[cpu][matmul][timeout]") {
  using namespace std::chrono_literals;
  vgpu::Runtime runtime;
  vgpu::Device cpu = runtime.open("cpu:0");
  // 2048³ is 17 GFLOP: far more than 1 ms on any CPU, so the limit always passes mid-product
  // (the kernel polls it once per K block; one workgroup covers the whole product).
  const std::uint32_t n = 2048;
  const std::size_t bytes = std::size_t{n} * n * 4;
  vgpu::KernelPlan plan = vgpu::ops::matmul(cpu.info(), n, n, n);
  const vgpu::Kernel kernel = cpu.compile(plan.source, plan.options);
  vgpu::Buffer ba = cpu.create_buffer(bytes), bc = cpu.create_buffer(bytes);
  std::vector<float> ones(std::size_t{n} * n, 1.0f), c(std::size_t{n} * n, kNaN);
  cpu.write(ba, ones.data(), bytes);
  cpu.write(bc, c.data(), bytes);
  const vgpu::BindingSet set = cpu.bind(kernel, {{0, ba}, {1, ba}, {2, bc}});
  cpu.set_timeout(1ms);
  REQUIRE_VGPU_ERROR(timeout, "", {
    cpu.dispatch(kernel, set, plan.steps.at(0).params, plan.steps.at(0).groups);
    cpu.synchronize();
  });
  cpu.set_timeout(60s);
  // Every entry of the finished product is 2048 (ones · ones); the stopped one left K blocks
  // undone, so some entry is not (a kernel that ignored the limit would have finished them all).
  cpu.read(bc, c.data(), bytes);
  std::size_t finished = 0;
  for (const float v : c) finished += v == static_cast<float>(n);
  CHECK(finished < c.size());
  // The device is not lost, and the next product is right.
  cpu.set_timeout(60s);
  CHECK(!cpu.lost());
  check_product(cpu, {300, 1000, 17}, 2);
}

}  // namespace
}  // namespace vgpu_test
