// SPDX-License-Identifier: Apache-2.0
// tests/contract/steady_test.cpp — "compile once, bind once, dispatch many" on every backend: after
// a persistent kernel's first call, 200 calls with new data compile, look up, allocate and bind
// nothing (no L1, L2 or L3 traffic), submit once per call, and the last call reflects the last
// data. (tests/runtime/steady_state_test.cpp adds the byte counts and the Cache/KernelDatabase paths.)
#include <functional>

#include "contract/contract.hpp"
#include "support/numerics.hpp"
#include "support/plan_runner.hpp"

namespace vgpu_test::contract {
namespace {

struct SteadyOp {
  vgpu::KernelPlan plan;
  HostTensors args;
  std::size_t inputs;  // args[0 .. inputs) are poked, in turn
  std::size_t output;
  std::function<Reference(const HostTensors&)> reference;
};

/// Overwrites three elements of v for call i with values that cycle, so every call differs.
void poke(std::vector<float>& v, std::uint64_t i) {
  for (std::uint64_t j = 0; j < 3; ++j)
    v[(i * 7919 + j * 104729) % v.size()] = static_cast<float>((i + j) % 13) * 0.25f - 1.5f;
}

void check_steady(vgpu::Device& device, SteadyOp op, std::uint64_t kCalls = 200) {
  INFO(op.plan.source.name << " (" << op.args[0].size() << " input elements)");
  vgpu::PersistentKernel kernel(device, op.plan);
  call(kernel, op.args);  // the first call may warm what the backend warms lazily
  const std::uint64_t steps = op.plan.steps.size();
  const vgpu::CounterSnapshot before = device.counters();
  for (std::uint64_t i = 0; i < kCalls; ++i) {
    poke(op.args[i % op.inputs], i);
    call(kernel, op.args);
  }
  const vgpu::CounterSnapshot d = device.counters() - before;
  INFO(kCalls << " calls: " << d.to_string());
  CHECK(d.compiles == 0);
  CHECK(d.source_compiles == 0);
  CHECK(d.l1_hits + d.l1_misses == 0);
  CHECK(d.l2_hits + d.l2_misses + d.l3_hits == 0);
  CHECK(d.allocations == 0);
  CHECK(d.binds == 0);
  CHECK(d.submits == kCalls);
  CHECK(d.dispatches == kCalls * steps);
  const Comparison c = compare(op.args[op.output], op.reference(op.args));
  INFO("last call: " << c.describe());
  CHECK(c.ok());
}

SteadyOp matmul(const vgpu::DeviceInfo& info, std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint64_t seed) {
  return {vgpu::ops::matmul(info, m, k, n),
          {random_floats(m * k, seed), random_floats(k * n, seed + 1), std::vector<float>(m * n)},
          2,
          2,
          [m, k, n](const HostTensors& a) { return matmul_reference(a[0], a[1], m, k, n); }};
}

SteadyOp reduce_sum(const vgpu::DeviceInfo& info, std::uint32_t n, std::uint64_t seed) {
  return {vgpu::ops::reduce_sum(info, n), {random_floats(n, seed), {0.0f}}, 1, 1, [](const HostTensors& a) {
            return sum_reference(a[0]);
          }};
}

SteadyOp softmax(const vgpu::DeviceInfo& info, std::uint32_t rows, std::uint32_t cols, std::uint64_t seed) {
  return {vgpu::ops::softmax_rows(info, rows, cols),
          {random_floats(rows * cols, seed), std::vector<float>(rows * cols)},
          1,
          1,
          [rows, cols](const HostTensors& a) { return softmax_reference(a[0], rows, cols); }};
}

}  // namespace

CONTRACT_CASE("steady state: 200 persistent calls with new data compile, allocate and bind nothing", "[steady]",
              every_backend) {
  vgpu::Device device = open_device(backend);
  const vgpu::DeviceInfo& info = device.info();
  // Shapes on and off the tile sizes, reductions of one and several steps, narrow and wide rows.
  check_steady(device, matmul(info, 64, 64, 64, 11));
  check_steady(device, matmul(info, 33, 17, 45, 3));
  check_steady(device, matmul(info, 67, 33, 129, 21));
  check_steady(device, reduce_sum(info, 100000, 13));
  check_steady(device, reduce_sum(info, 10000, 5));
  check_steady(device, softmax(info, 15, 17, 14));
  check_steady(device, softmax(info, 15, 1000, 24));
  check_steady(device, {vgpu::ops::add(info, 1000),
                        {random_floats(1000, 1), random_floats(1000, 2), std::vector<float>(1000)},
                        2,
                        2,
                        [](const HostTensors& a) { return binary_reference(a[0], a[1], false); }});
}

// Round trips of ≥ 1 MiB one way take another path on CUDA (chunked, pipelined staging:
// cuda_round_trip.cpp): sizes just past the threshold and off every chunk boundary, inputs
// large with a small output and the reverse, stay right and steady.
CONTRACT_CASE("steady state: large round trips (>= 1 MiB one way, off chunk boundaries) stay right and steady",
              "[steady]", every_backend) {
  vgpu::Device device = open_device(backend);
  const vgpu::DeviceInfo& info = device.info();
  for (const std::uint32_t n : {262145u, 1000003u})
    check_steady(device,
                 {vgpu::ops::add(info, n),
                  {random_floats(n, n + 1), random_floats(n, n + 2), std::vector<float>(n)},
                  2,
                  2,
                  [](const HostTensors& a) { return binary_reference(a[0], a[1], false); }},
                 5);
  check_steady(device, matmul(info, 1000, 17, 1025, 31), 5);  // 4 MB out, 68 KB in
  check_steady(device, reduce_sum(info, 1000003, 7), 5);      // 4 MB in, 4 bytes out
}

}  // namespace vgpu_test::contract
