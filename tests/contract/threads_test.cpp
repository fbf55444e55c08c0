// SPDX-License-Identifier: Apache-2.0
// tests/contract/threads_test.cpp — several user threads on one device each get their own right
// results (every sum is exact, so any mix-up between threads shows), share one compiled kernel
// (single-flight L1), and allocate and bind only what each asked for.
#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "contract/contract.hpp"
#include "support/numerics.hpp"

namespace vgpu_test::contract {
namespace {

constexpr std::uint32_t kN = 4097, kThreads = 4, kCalls = 50;

/// Fills a and b for thread t's call c with small integers and halves (exact sums), out with NaN.
void fill(std::vector<float>& a, std::vector<float>& b, std::vector<float>& out, std::uint32_t t, std::uint32_t c) {
  for (std::uint32_t i = 0; i < kN; ++i) {
    a[i] = static_cast<float>(t * 100000 + c * 1000 + i % 997);
    b[i] = static_cast<float>(i % 13) * 0.5f;
  }
  std::fill(out.begin(), out.end(), kNaN);
}

/// Calls the persistent add kernel kCalls times with thread t's data, counting wrong elements.
void persistent_calls(vgpu::Device& device, std::uint32_t t, std::atomic<std::uint64_t>& wrong,
                      std::atomic<std::uint64_t>& calls) {
  vgpu::PersistentKernel kernel(device, vgpu::ops::add(device.info(), kN));
  std::vector<float> a(kN), b(kN), out(kN);
  for (std::uint32_t c = 0; c < kCalls; ++c) {
    fill(a, b, out, t, c);
    kernel({vgpu::TensorArg(static_cast<const float*>(a.data()), {kN}),
            vgpu::TensorArg(static_cast<const float*>(b.data()), {kN}), vgpu::TensorArg(out.data(), {kN})});
    for (std::uint32_t i = 0; i < kN; ++i) wrong += out[i] != a[i] + b[i];
    ++calls;
  }
}

/// Runs body(t) on kThreads threads and fails the test with the message of any that threw.
template <class Body>
void on_threads(Body body) {
  std::mutex mutex;
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  for (std::uint32_t t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        body(t);
      } catch (const std::exception& e) {
        std::lock_guard lock(mutex);
        errors.push_back(e.what());
      }
    });
  for (auto& th : threads) th.join();
  for (const auto& e : errors) FAIL_CHECK("thread failed: " << e);
}

}  // namespace

CONTRACT_CASE("threads: four persistent add kernels on one device, 50 calls each", "[threads]", every_backend) {
  vgpu::Device device = open_device(backend);
  const vgpu::CounterSnapshot before = device.counters();
  std::atomic<std::uint64_t> wrong{0}, calls{0};
  on_threads([&](std::uint32_t t) { persistent_calls(device, t, wrong, calls); });
  CHECK(calls == kThreads * kCalls);
  CHECK(wrong == 0);
  const vgpu::CounterSnapshot d = device.counters() - before;
  INFO(d.to_string());
  CHECK(d.compiles <= 1);  // one shared kernel (single-flight L1), unless an earlier test built it
  CHECK(d.compiles + d.l1_hits == kThreads);
  // A, B and out per kernel, where the device stages them (the CPU runs on the callers' memory).
  CHECK(d.allocations == (vgpu::Array::uses_host_memory(device) ? 0 : kThreads * 3));
  // One bind per kernel, made (and its plan checked) in the constructor; where calls run on the
  // caller's memory, the first call binds that memory once more.
  CHECK(d.binds == kThreads * (vgpu::Array::uses_host_memory(device) ? 2 : 1));
  CHECK(d.submits == kThreads * kCalls);
  CHECK(d.dispatches == kThreads * kCalls);
}

CONTRACT_CASE("threads: four user threads mixing persistent kernels and raw dispatches get their own right results",
              "[threads]", every_backend) {
  vgpu::Device device = open_device(backend);
  const vgpu::CounterSnapshot before = device.counters();
  std::atomic<std::uint64_t> wrong{0}, calls{0};
  // Odd threads: a PersistentKernel (recorded batch); even ones: raw dispatches.
  on_threads([&](std::uint32_t t) {
    if (t % 2) return persistent_calls(device, t, wrong, calls);
    const auto plan = vgpu::ops::add(device.info(), kN);
    const vgpu::Kernel k = device.compile(plan.source, plan.options);
    vgpu::Buffer ba = device.create_buffer(kN * 4), bb = device.create_buffer(kN * 4),
                 bo = device.create_buffer(kN * 4);
    const vgpu::BindingSet set = device.bind(k, {{0, ba}, {1, bb}, {2, bo}});
    std::vector<float> a(kN), b(kN), out(kN);
    for (std::uint32_t c = 0; c < kCalls; ++c) {
      fill(a, b, out, t, c);
      device.write(ba, a.data(), kN * 4);
      device.write(bb, b.data(), kN * 4);
      device.dispatch(k, set, plan.steps[0].params, plan.steps[0].groups);
      device.read(bo, out.data(), kN * 4);
      for (std::uint32_t i = 0; i < kN; ++i) wrong += out[i] != a[i] + b[i];
      ++calls;
    }
  });
  CHECK(calls == kThreads * kCalls);
  CHECK(wrong == 0);
  const vgpu::CounterSnapshot d = device.counters() - before;
  INFO(d.to_string());
  CHECK(d.compiles <= 1);  // one shared kernel (single-flight L1), unless an earlier test built it
  // Three buffers per raw-dispatch thread; per persistent kernel too, where the device stages.
  const std::uint64_t per_kernel = vgpu::Array::uses_host_memory(device) ? 0 : 3;
  CHECK(d.allocations == kThreads / 2 * 3 + kThreads / 2 * per_kernel);
  CHECK(d.binds == kThreads / 2 + kThreads / 2 * (per_kernel ? 1 : 2));  // as in the case above
  CHECK(d.dispatches == kThreads * kCalls);
}

}  // namespace vgpu_test::contract
