// SPDX-License-Identifier: Apache-2.0
// tests/runtime/steady_state_test.cpp — "compile once, bind once, dispatch many", made observable:
// after a persistent kernel's first call, calls with new data compile, allocate and bind
// nothing; only uploads, dispatches and read-backs move, by exactly the expected amounts.
// Then the same property through vgpu::Cache and KernelDatabase.
#include "support/catch.hpp"

#include <atomic>
#include <functional>
#include <thread>

#include "support/kernel_sources.hpp"
#include "support/numerics.hpp"
#include "support/plan_runner.hpp"
#include "vgpu/vgpu.hpp"

namespace vgpu_test {
namespace {

constexpr std::uint64_t kCalls = 1000;

std::vector<vgpu::Device> all_devices() {
  std::vector<vgpu::Device> out;
  for (const auto& info : vgpu::Runtime::global().devices()) out.push_back(vgpu::Runtime::global().open(info));
  return out;
}

struct SteadyCase {
  vgpu::KernelPlan plan;
  HostTensors args;
  std::uint64_t bytes_up_per_call, bytes_down_per_call;       // derived by hand from the op's tensors
  std::function<void(HostTensors&, std::uint64_t)> new_data;  // changes the inputs for call i
  std::function<Reference(const HostTensors&)> reference;     // expected output from the inputs
  std::size_t output;                                         // index of the checked output
};

void check_steady_state(vgpu::Device& device, SteadyCase c) {
  INFO(device.info().id() << " " << c.plan.source.name);
  vgpu::PersistentKernel kernel(device, c.plan);
  call(kernel, c.args);  // first call: may warm anything the backend warms lazily
  const std::uint64_t steps = kernel.plan().steps.size();
  REQUIRE(steps >= 1);
  const vgpu::CounterSnapshot before = device.counters();
  HostTensors last_inputs;
  for (std::uint64_t i = 0; i < kCalls; ++i) {
    c.new_data(c.args, i);
    if (i + 1 == kCalls) last_inputs = c.args;
    call(kernel, c.args);
  }
  const vgpu::CounterSnapshot d = device.counters() - before;
  INFO("counter delta over " << kCalls << " calls: " << d.to_string());
  CHECK(d.compiles == 0);
  CHECK(d.l1_hits == 0);
  CHECK(d.l1_misses == 0);
  CHECK(d.allocations == 0);
  CHECK(d.binds == 0);
  CHECK(d.dispatches == kCalls * steps);
  CHECK(d.submits == kCalls);  // one recorded batch per call
  // A device that uses host memory in place (the CPU) copies nothing at all; the others
  // upload the inputs and read the outputs back, exactly.
  const bool in_place = vgpu::Array::uses_host_memory(device);
  CHECK(d.bytes_up == (in_place ? 0 : kCalls * c.bytes_up_per_call));
  CHECK(d.bytes_down == (in_place ? 0 : kCalls * c.bytes_down_per_call));
  CHECK(kernel.calls() == kCalls + 1);
  CHECK(kernel.dispatches() == (kCalls + 1) * steps);
  CHECK(kernel.total_seconds() > 0.0);
  // The last call's output reflects the last call's data (no stale buffers or cached results).
  const Comparison cmp = compare(c.args[c.output], c.reference(last_inputs));
  INFO(cmp.describe());
  CHECK(cmp.ok());
}

// Overwrites one input element per call with a value that cycles, so every call differs.
void poke(std::vector<float>& v, std::uint64_t i) {
  v[(i * 7919) % v.size()] = static_cast<float>(i % 13) * 0.25f - 1.5f;
}

}  // namespace

TEST_CASE("steady state: persistent matmul, axpy, reduce_sum, softmax allocate and compile nothing", "[steady]") {
  for (vgpu::Device device : all_devices()) {
    const vgpu::DeviceInfo& info = device.info();
    constexpr std::uint32_t n = 64;
    check_steady_state(device, {vgpu::ops::matmul(info, n, n, n),
                                {random_floats(n * n, 1), random_floats(n * n, 2), std::vector<float>(n * n)},
                                2 * n * n * 4,
                                n * n * 4,
                                [](HostTensors& a, std::uint64_t i) { poke(a[i % 2], i); },
                                [](const HostTensors& a) { return matmul_reference(a[0], a[1], n, n, n); },
                                2});

    const auto y0 = random_floats(1000, 4);
    check_steady_state(device, {vgpu::ops::axpy(info, 1000),
                                {{0.5f}, random_floats(1000, 3), y0},
                                4 + 2 * 1000 * 4,
                                1000 * 4,
                                [y0](HostTensors& a, std::uint64_t i) {
                                  a[2] = y0;  // y is read-write: restore it so results stay bounded
                                  a[0][0] = static_cast<float>(i % 5) - 2.0f;
                                  poke(a[1], i);
                                },
                                [](const HostTensors& a) { return axpy_reference(a[0][0], a[1], a[2]); },
                                2});

    check_steady_state(device, {vgpu::ops::reduce_sum(info, 100000),
                                {random_floats(100000, 5), {0.0f}},
                                100000 * 4,
                                4,
                                [](HostTensors& a, std::uint64_t i) { poke(a[0], i); },
                                [](const HostTensors& a) { return sum_reference(a[0]); },
                                1});

    check_steady_state(device, {vgpu::ops::softmax_rows(info, 16, 100),
                                {random_floats(1600, 6), std::vector<float>(1600)},
                                1600 * 4,
                                1600 * 4,
                                [](HostTensors& a, std::uint64_t i) { poke(a[0], i); },
                                [](const HostTensors& a) { return softmax_reference(a[0], 16, 100); },
                                1});
  }
}

TEST_CASE("Cache: 100 same-shape matmuls compile once and hit 99 times", "[steady][cache]") {
  for (vgpu::Device device : all_devices()) {
    INFO(device.info().id());
    vgpu::Cache cache(device);
    CHECK(cache.device() == device);
    CHECK(cache.report() == "VGPUCache: 0 compiles, 0 cache hits, 0 dispatches");
    vgpu::Matrix a(16, 16), b(16, 16), c;
    a.data = random_floats(256, 16);
    b.data = random_floats(256, 17);
    const vgpu::CounterSnapshot before = device.counters();
    for (int i = 0; i < 100; ++i) {
      a(i % 16, (i * 5) % 16) = static_cast<float>(i) * 0.01f;
      c = cache.matmul(a, b);
    }
    const vgpu::CounterSnapshot d = device.counters() - before;
    INFO(d.to_string());
    CHECK(cache.report() == "VGPUCache: 1 compiles, 99 cache hits, 100 dispatches");
    CHECK(cache.compiles() == 1);
    CHECK(cache.hits() == 99);
    CHECK(cache.dispatches() == 100);
    CHECK(d.compiles + d.l1_hits == 1);  // one kernel, from the backend or from L1
    // A, B, C once; none where the kernel runs on the matrices' own memory (the CPU).
    CHECK(d.allocations == (vgpu::Array::uses_host_memory(device) ? 0u : 3u));
    CHECK(d.dispatches >= 100);
    REQUIRE(c.rows == 16);
    REQUIRE(c.cols == 16);
    const Comparison cmp = compare(c.data, matmul_reference(a.data, b.data, 16, 16, 16));
    INFO(cmp.describe());
    CHECK(cmp.ok());

    // A new shape builds once more; the raw-pointer form shares the same kernels.
    vgpu::Matrix b2(16, 5, 0.5f);
    c = cache.matmul(a, b2);
    CHECK(c.cols == 5);
    std::vector<float> raw(16 * 5);
    cache.matmul(a.data.data(), b2.data.data(), raw.data(), 16, 16, 5);
    CHECK(raw == c.data);
    CHECK(cache.report() == "VGPUCache: 2 compiles, 100 cache hits, 102 dispatches");
  }
}

TEST_CASE("KernelDatabase: hits, misses, report, rebuild only on shape change, evict", "[steady][db]") {
  vgpu::Device device = vgpu::Runtime::global().open("cpu:0");
  vgpu::KernelDatabase db(device);
  CHECK(db.report() == "KernelDB: 0 hits, 0 compiles");
  auto k1 = db.get("matmul", {16, 16, 16});
  const vgpu::CounterSnapshot before = device.counters();
  auto k2 = db.get("matmul", {16, 16, 16});
  auto k3 = db.get("matmul", {16, 16, 16});
  const vgpu::CounterSnapshot d = device.counters() - before;
  CHECK(k1 == k2);
  CHECK(k2 == k3);
  CHECK(d.compiles + d.l1_hits + d.l1_misses + d.allocations + d.binds == 0);
  CHECK(db.hits() == 2);
  CHECK(db.misses() == 1);
  CHECK(db.size() == 1);
  CHECK(db.report() == "KernelDB: 2 hits, 1 compiles");

  auto k4 = db.get("matmul", {16, 16, 17});  // new shape: new kernel
  CHECK(k4 != k1);
  CHECK(k4->plan().tensors[2].shape == vgpu::Shape{16, 17});
  db.get("add", {100});
  CHECK(db.report() == "KernelDB: 2 hits, 3 compiles");
  CHECK(db.size() == 3);

  db.evict("mat");  // a prefix of an id is not that id
  CHECK(db.size() == 3);
  db.evict("matmul");
  CHECK(db.size() == 1);
  // An evicted kernel the caller still holds keeps working.
  HostTensors args{random_floats(256, 1), random_floats(256, 2), std::vector<float>(256, kNaN)};
  run_persistent(*k1, args);
  CHECK(compare(args[2], matmul_reference(args[0], args[1], 16, 16, 16)).ok());
  auto k5 = db.get("matmul", {16, 16, 16});
  CHECK(k5 != k1);
  CHECK(db.misses() == 4);
  db.evict();
  CHECK(db.size() == 0);
  db.get("add", {100});
  CHECK(db.report() == "KernelDB: 2 hits, 5 compiles");
}

TEST_CASE("KernelDatabase: a re-registered or changed factory recompiles", "[steady][db]") {
  vgpu::Device device = vgpu::Runtime::global().open("cpu:0");
  vgpu::KernelDatabase db(device);
  db.add("mine", [](const vgpu::DeviceInfo& info, const vgpu::Shape& s) { return vgpu::ops::add(info, s[0]); });
  auto a1 = db.get("mine", {64});
  CHECK(db.get("mine", {64}) == a1);
  const vgpu::CounterSnapshot before = device.counters();
  db.add("mine", [](const vgpu::DeviceInfo& info, const vgpu::Shape& s) {
    auto p = vgpu::ops::add(info, s[0]);
    p.options.defines["VGPU_TEST_VARIANT"] = "re-registered";  // a different specialisation
    return p;
  });
  CHECK(db.size() == 0);  // replacing a factory drops its kernels
  auto a2 = db.get("mine", {64});
  CHECK(a2 != a1);
  CHECK((device.counters() - before).compiles == 1);  // a new kernel key: a real compile
  CHECK(db.misses() == 2);
  HostTensors args{random_floats(64, 1), random_floats(64, 2), std::vector<float>(64, kNaN)};
  run_persistent(*a2, args);
  for (int i = 0; i < 64; ++i) CHECK(args[2][i] == args[0][i] + args[1][i]);

  // A factory whose plan changes for the same id and shape is rebuilt: the key covers the plan.
  int variant = 0;
  db.add("flex", [&variant](const vgpu::DeviceInfo& info, const vgpu::Shape& s) {
    auto p = vgpu::ops::mul(info, s[0]);
    if (variant) p.options.defines["VGPU_TEST_FLEX"] = std::to_string(variant);
    return p;
  });
  auto f1 = db.get("flex", {10});
  CHECK(db.get("flex", {10}) == f1);
  variant = 1;
  auto f2 = db.get("flex", {10});
  CHECK(f2 != f1);
  CHECK(db.report() == "KernelDB: 2 hits, 4 compiles");

  // A CPU callable's behaviour cannot be hashed: bumping DialectSource::version is how its
  // author says "this changed", and that rebuilds too.
  std::string version = "1";
  db.add("callable", [&version](const vgpu::DeviceInfo& info, const vgpu::Shape& s) {
    auto p = vgpu::ops::mul(info, s[0]);
    set_cpu(
        p.source, [](const vgpu::CpuWorkgroup&) {}, version);
    return p;
  });
  auto c1 = db.get("callable", {10});
  CHECK(db.get("callable", {10}) == c1);
  version = "2";
  CHECK(db.get("callable", {10}) != c1);
  CHECK(db.report() == "KernelDB: 3 hits, 6 compiles");
}

TEST_CASE("KernelDatabase and PersistentKernel shared by several threads", "[steady][db][threads]") {
  // Documented thread-safe: concurrent get() builds one kernel per shape, and concurrent calls
  // of one persistent kernel are serialised, each seeing its own inputs and outputs.
  vgpu::Device device = vgpu::Runtime::global().open("cpu:0");
  vgpu::KernelDatabase db(device);
  constexpr int kThreads = 4, kCallsPerThread = 50;
  std::atomic<int> wrong{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int i = 0; i < kCallsPerThread; ++i) {
          auto kernel = db.get("add", {257});
          std::vector<float> a(257, static_cast<float>(t)), b(257, static_cast<float>(i)), out(257, kNaN);
          (*kernel)(
              {vgpu::TensorArg(a.data(), {257}), vgpu::TensorArg(b.data(), {257}), vgpu::TensorArg(out.data(), {257})});
          for (float v : out) wrong += v != static_cast<float>(t + i);
        }
      } catch (...) {
        ++errors;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(errors == 0);
  CHECK(wrong == 0);
  CHECK(db.misses() == 1);
  CHECK(db.hits() == kThreads * kCallsPerThread - 1);
  CHECK(db.get("add", {257})->calls() == kThreads * kCallsPerThread);
}

}  // namespace vgpu_test
