// SPDX-License-Identifier: Apache-2.0
// tests/runtime/timeout_test.cpp — no wait without a limit, on the CPU backend and in core:
// VGPU_TIMEOUT_MS and Device::set_timeout, the per-call limits of Device::round_trip,
// Device::synchronize and PersistentKernel, 0 = no limit, CpuWorkgroup::expired(), the
// timeout category, what a lost device does (it recovers in place at its next call) and
// KernelDatabase's handling of both. The GPU backends' timeouts are in gpu_timeout_test.cpp.
//
// Wall-clock checks are generous upper bounds only: they prove a call gave up instead of
// running its work to the end (which would take many seconds), never how fast it was.
#include <unistd.h>

#include <atomic>
#include "support/catch.hpp"
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/capture_stderr.hpp"
#include "support/expect_error.hpp"
#include "support/kernel_sources.hpp"
#include "support/numerics.hpp"
#include "support/scoped_env.hpp"
#include "support/test_backend.hpp"
#include "support/timing.hpp"
#include "vgpu/backend/deadline.hpp"
#include "vgpu/vgpu.hpp"

namespace vgpu_test {
namespace {

vgpu::RuntimeOptions cpu_only() {
  vgpu::RuntimeOptions o;
  o.allowed = {vgpu::BackendKind::cpu};
  return o;
}

/// A user CPU kernel with no bindings whose every workgroup sleeps sleep_ms and counts itself.
vgpu::KernelSource sleeping_source(std::atomic<int>* started, int sleep_ms) {
  vgpu::KernelSource s;
  s.name = "test.sleeping_groups";
  set_cpu(
      s,
      [started, sleep_ms](const vgpu::CpuWorkgroup&) {
        started->fetch_add(1);
        std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
      },
      "");
  return s;
}

/// Dispatches groups workgroups of the sleeping kernel (64 invocations each) on device.
void dispatch_sleeping(vgpu::Device& device, std::atomic<int>* started, int sleep_ms, std::uint32_t groups) {
  vgpu::CompileOptions o;
  o.workgroup_size = {64, 1, 1};
  const vgpu::Kernel k = device.compile(sleeping_source(started, sleep_ms), o);
  const vgpu::BindingSet set = device.bind(k, std::span<const vgpu::Binding>{});
  device.dispatch(k, set, vgpu::ParamsBlock{}, {groups, 1, 1});
}

/// A plan whose kernel doubles its input, out[i] = 2 * in[i], in groups of 1024. When in[0] is
/// -1000 - t (t > 0), every workgroup first sleeps t ms: "slow" is data, so a slow call and a
/// fast call of one PersistentKernel differ in nothing but their data (calibration's random
/// inputs in [-0.5, 1) are always fast).
vgpu::KernelPlan doubling_plan(std::uint64_t n) {
  vgpu::KernelPlan p;
  p.source.name = "test.doubling";
  set_cpu(
      p.source,
      [](const vgpu::CpuWorkgroup& wg) {
        const float* in = wg.buffer<const float>(0);
        float* out = wg.buffer<float>(1);
        const auto count = static_cast<std::uint64_t>(wg.buffers[0].bytes / 4);
        if (in[0] <= -1000.0f) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(-1000.0 - in[0]));
        wg.for_each_invocation([&](auto gid, auto) {
          if (gid[0] < count) out[gid[0]] = 2.0f * in[gid[0]];
        });
      },
      "");
  p.source.bindings = {{0, vgpu::Access::read, "in", {}}, {1, vgpu::Access::write, "out", {}}};
  p.options.workgroup_size = {1024, 1, 1};
  p.tensors = {{"in", vgpu::DType::f32, {n}, vgpu::Access::read, false},
               {"out", vgpu::DType::f32, {n}, vgpu::Access::write, false}};
  p.steps = {{{{0, 0}, {1, 1}}, vgpu::ParamsBlock{}, {static_cast<std::uint32_t>((n + 1023) / 1024), 1, 1}}};
  return p;
}

/// Input for doubling_plan: slow_ms > 0 makes every workgroup sleep that long.
std::vector<float> doubling_input(std::uint64_t n, double slow_ms, std::uint64_t seed) {
  std::vector<float> in = random_floats(n, seed);
  if (slow_ms > 0) in[0] = static_cast<float>(-1000.0 - slow_ms);
  return in;
}

/// Calls pk on in (with limit when given) and checks out == 2 * in.
void check_doubling(vgpu::PersistentKernel& pk, const std::vector<float>& in,
                    const std::chrono::milliseconds* limit = nullptr) {
  std::vector<float> out(in.size(), kNaN);
  const vgpu::TensorArg args[] = {vgpu::TensorArg(in.data(), {in.size()}), vgpu::TensorArg(out.data(), {in.size()})};
  if (limit)
    pk(args, *limit);
  else
    pk(args);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < in.size(); ++i) wrong += out[i] != 2.0f * in[i];
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("timeout is an error category of its own", "[timeout]") {
  CHECK(vgpu::to_string(vgpu::ErrorCategory::timeout) == "timeout");
  const vgpu::DeviceInfo info = vgpu::Runtime::global().open("cpu:0").info();
  const vgpu::Deadline d = vgpu::Deadline::after(250ms);
  REQUIRE_VGPU_ERROR(timeout, "time limit of 250 ms", vgpu::fail_timeout(info, d, "testing", false));
  REQUIRE_VGPU_ERROR(timeout, "the next call on the Device recreates it", vgpu::fail_timeout(info, d, "testing", true));
}

TEST_CASE("VGPU_TIMEOUT_MS: digits only, 0 = no limit, default 60000 ms, a bad value warns with a Fix hint",
          "[timeout][env]") {
  // Read through vgpu::Config like every VGPU_* variable (an empty value counts as unset).
  auto read = [](const char* value) {
    ScopedEnv env("VGPU_TIMEOUT_MS", value);
    std::chrono::milliseconds got{};
    const std::string err = stderr_of([&] { got = vgpu::Config::from_env().timeout; });
    return std::pair{got, err};
  };
  CHECK(read("0").first == 0ms);
  CHECK(read("150").first == 150ms);
  CHECK(read("1000000000000").first == 1'000'000'000'000ms);
  for (const char* bad :
       {"-5", "+5", " 5", "5 ", "1e3", "10ms", "abc", "0x10", "1000000000001", "99999999999999999999"}) {
    INFO("VGPU_TIMEOUT_MS='" << bad << "'");
    const auto [got, err] = read(bad);
    CHECK(got == vgpu::kDefaultTimeout);
    CHECK_THAT(err, Catch::Matchers::ContainsSubstring("VGPU_TIMEOUT_MS='" + std::string(bad) + "'") &&
                        Catch::Matchers::ContainsSubstring("Fix: "));
  }
  {
    ScopedEnv env("VGPU_TIMEOUT_MS", std::nullopt);
    CHECK(vgpu::Config::from_env().timeout == vgpu::kDefaultTimeout);
    CHECK(vgpu::kDefaultTimeout == 60000ms);
  }
  {
    ScopedEnv env("VGPU_TIMEOUT_MS", "0");
    CHECK(vgpu::Config::from_env().timeout == 0ms);
    vgpu::Runtime runtime(cpu_only());
    CHECK(runtime.open("cpu:0").timeout() == 0ms);
  }
  {
    ScopedEnv env("VGPU_TIMEOUT_MS", "1500");
    vgpu::Runtime runtime(cpu_only());
    CHECK(runtime.open("cpu:0").timeout() == 1500ms);
  }
  {
    ScopedEnv env("VGPU_TIMEOUT_MS", "-1");
    std::chrono::milliseconds got{};
    const std::string err = stderr_of([&] { got = vgpu::Config::from_env().timeout; });
    INFO(err);
    CHECK(got == vgpu::kDefaultTimeout);
    CHECK_THAT(
        err, Catch::Matchers::ContainsSubstring("VGPU_TIMEOUT_MS='-1'") && Catch::Matchers::ContainsSubstring("Fix: "));
  }
}

TEST_CASE("CPU: a dispatch of sleeping workgroups stops at VGPU_TIMEOUT_MS and the device stays usable",
          "[timeout][cpu]") {
  ScopedEnv env("VGPU_TIMEOUT_MS", "100");
  vgpu::Runtime runtime(cpu_only());
  vgpu::Device device = runtime.open("cpu:0");
  REQUIRE(device.timeout() == 100ms);
  std::atomic<int> started{0};
  constexpr std::uint32_t kGroups = 400;  // × 25 ms: 10 s of work on one core, 5 s on two
  const auto t0 = Clock::now();
  REQUIRE_VGPU_ERROR(timeout, "time limit of 100 ms", dispatch_sleeping(device, &started, 25, kGroups));
  const double took = seconds_since(t0);
  INFO("gave up after " << took << " s with " << started.load() << " of " << kGroups << " workgroups started");
  CHECK(took < 3.0);
  CHECK(started.load() < static_cast<int>(kGroups));
  // Nothing of the dispatch still runs: the device is not lost and computes right at once.
  CHECK(!device.lost());
  CHECK(runtime.open("cpu:0") == device);
  vgpu::PersistentKernel pk(device, doubling_plan(5000));
  const std::chrono::milliseconds generous = 60s;  // the device's own 100 ms could fail a slow (sanitised) build
  check_doubling(pk, doubling_input(5000, 0, 1), &generous);
}

TEST_CASE("CPU: a workgroup polling CpuWorkgroup::expired() ends early and the call raises timeout", "[timeout][cpu]") {
  vgpu::Runtime runtime(cpu_only());
  vgpu::Device device = runtime.open("cpu:0");
  device.set_timeout(100ms);
  CHECK(device.timeout() == 100ms);
  std::atomic<bool> saw_expiry{false};
  vgpu::KernelSource s;
  s.name = "test.polling";
  set_cpu(
      s,
      [&saw_expiry](const vgpu::CpuWorkgroup& wg) {
        const auto until = Clock::now() + 30s;  // without a working expired(), a 30 s spin
        while (Clock::now() < until)
          if (wg.expired()) {
            saw_expiry = true;
            return;
          }
      },
      "");
  const vgpu::Kernel k = device.compile(s, {});
  const vgpu::BindingSet set = device.bind(k, std::span<const vgpu::Binding>{});
  const auto t0 = Clock::now();
  REQUIRE_VGPU_ERROR(timeout, "running CPU kernel 'test.polling'",
                     device.dispatch(k, set, vgpu::ParamsBlock{}, {1, 1, 1}));
  CHECK(seconds_since(t0) < 5.0);
  CHECK(saw_expiry);
  CHECK(!device.lost());
  // Without a limit nothing ever expires (the kernel would spin its 30 s): a fast kernel then.
  device.set_timeout(0ms);
  vgpu::PersistentKernel pk(device, doubling_plan(3000));
  check_doubling(pk, doubling_input(3000, 0, 2));
  REQUIRE_VGPU_ERROR(invalid_argument, "negative time limit", device.set_timeout(-1ms));
}

TEST_CASE(
    "CPU: per-call limits of PersistentKernel and round_trip, 0 = no limit, a timeout changes no counter "
    "beyond the call",
    "[timeout][cpu][steady]") {
  vgpu::Runtime runtime(cpu_only());
  vgpu::Device device = runtime.open("cpu:0");
  REQUIRE(device.timeout() == vgpu::Config::from_env().timeout);  // the ctest environment leaves it unset: 60 s
  const std::uint64_t n = 64 * 1024;                              // 64 workgroups
  vgpu::PersistentKernel pk(device, doubling_plan(n));
  check_doubling(pk, doubling_input(n, 0, 3));  // first call: anything lazy happens here

  const vgpu::CounterSnapshot before = device.counters();
  // 64 groups × 100 ms: ~3 s of work on two cores; the call's own 100 ms limit stops it.
  const std::vector<float> slow = doubling_input(n, 100, 4);
  std::vector<float> out(n, kNaN);
  const vgpu::TensorArg args[] = {vgpu::TensorArg(slow.data(), {n}), vgpu::TensorArg(out.data(), {n})};
  auto t0 = Clock::now();
  REQUIRE_VGPU_ERROR(timeout, "time limit of 100 ms", pk(args, 100ms));
  CHECK(seconds_since(t0) < 2.0);
  CHECK(!device.lost());
  // The same kernel with new data: right, and nothing compiled or allocated; the CPU binds the
  // caller's memory itself, so each call at new addresses binds once (one step).
  check_doubling(pk, doubling_input(n, 0, 5));
  const std::chrono::milliseconds generous = 60s;
  check_doubling(pk, doubling_input(n, 0, 6), &generous);
  const vgpu::CounterSnapshot d = device.counters() - before;
  INFO(d.to_string());
  CHECK(d.compiles == 0);
  CHECK(d.allocations == 0);
  // Three calls at new addresses at most (the one that gave up, then two; the allocator may hand
  // a freed vector's address out again, which binds nothing).
  CHECK(d.binds <= 3);
  CHECK(d.submits == 2);  // the calls that finished; the one that gave up counts nothing

  // 0 = no limit: a call of ~0.3 s runs to its end under a 50 ms device limit when it says 0.
  // 64 groups of 5 ms × cores each: ~0.3 s whatever the core count (the H200 host has 16).
  device.set_timeout(50ms);
  const auto cores = std::max(1u, std::thread::hardware_concurrency());
  const std::vector<float> slowish = doubling_input(n, 5 * cores, 7);
  const std::chrono::milliseconds none = 0ms;
  check_doubling(pk, slowish, &none);
  REQUIRE_VGPU_ERROR(timeout, "time limit of 50 ms", check_doubling(pk, slowish));  // the device's limit
  CHECK(!device.lost());
  device.set_timeout(vgpu::kDefaultTimeout);

  // Device::round_trip and Device::synchronize take the same per-call limits.
  vgpu::Buffer buf = device.create_buffer(16);
  float host[4] = {1, 2, 3, 4}, back[4] = {};
  vgpu::HostWrite w[] = {{buf, host, 16, 0}};
  vgpu::HostRead r[] = {{buf, back, 16, 0}};
  device.round_trip(w, device.create_batch(), r, 10ms);
  CHECK(back[3] == 4.0f);
  device.synchronize(1ms);
  REQUIRE_VGPU_ERROR(invalid_argument, "negative time limit", device.round_trip(w, device.create_batch(), r, -5ms));
  REQUIRE_VGPU_ERROR(invalid_argument, "negative time limit", device.synchronize(-1ms));
  REQUIRE_VGPU_ERROR(invalid_argument, "negative time limit", pk(args, -1ms));
}

TEST_CASE("a lost device recovers in place at its next call, and Runtime::open returns that same Device",
          "[timeout][lost]") {
  auto knobs = std::vector<std::shared_ptr<TestDeviceKnobs>>{test_device(0, "lost-" + std::to_string(::getpid()))};
  vgpu::Runtime runtime(test_runtime_options(knobs));
  vgpu::Device device = runtime.open("test:0");
  vgpu::PersistentKernel pk(device, doubling_plan(2048));
  check_doubling(pk, doubling_input(2048, 0, 8));
  knobs[0]->fail_dispatch = true;  // every dispatch reports device_lost: the call's one retry fails too
  REQUIRE_VGPU_ERROR(device_lost, "was lost", check_doubling(pk, doubling_input(2048, 0, 9)));
  knobs[0]->fail_dispatch = false;
  CHECK(device.lost());
  CHECK(runtime.open("test:0") == device);          // the same Device, to be recovered by its next call
  check_doubling(pk, doubling_input(2048, 0, 10));  // recovers (rebuilding pk's kernel, buffers, batch), then runs
  CHECK(!device.lost());
  CHECK(device.counters().recoveries == 2);  // one for the failed retry, one now
  CHECK(device.counters().device_losses == 2);
  device.create_buffer(64);
  device.synchronize();
  device.compile(doubling_plan(16).source, {});
  vgpu::PersistentKernel again(device, doubling_plan(2048));
  check_doubling(again, doubling_input(2048, 0, 11));
}

TEST_CASE("KernelDatabase: a timeout reaches the caller without demoting the device, a lost one recovers in place",
          "[timeout][db]") {
  const std::string salt =
      "db-timeout-" + std::to_string(::getpid()) + "-" + std::to_string(Clock::now().time_since_epoch().count());
  // test:1 is 20 ms slower per dispatch: calibration picks test:0 however noisy the machine.
  auto knobs = std::vector<std::shared_ptr<TestDeviceKnobs>>{test_device(0, salt), test_device(20000, salt)};
  vgpu::Runtime runtime(test_runtime_options(knobs));
  vgpu::KernelDatabase db(runtime);
  db.add("doubling", [](const vgpu::DeviceInfo&, const vgpu::Shape& s) { return doubling_plan(s[0]); });
  const std::uint64_t n = 16 * 1024;
  auto run = [&](double slow_ms, std::uint64_t seed) {
    const std::vector<float> in = doubling_input(n, slow_ms, seed);
    std::vector<float> out(n, kNaN);
    const vgpu::TensorArg args[] = {vgpu::TensorArg(in.data(), {n}), vgpu::TensorArg(out.data(), {n})};
    db.call("doubling", {n}, args);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) wrong += out[i] != 2.0f * in[i];
    CHECK(wrong == 0);
  };
  run(0, 12);  // calibrates: test:0 is the fast one
  REQUIRE(db.device().info().id() == "test:0");
  runtime.open("test:0").set_timeout(100ms);
  REQUIRE_VGPU_ERROR(timeout, "time limit of 100 ms", run(200, 13));  // 16 groups × 200 ms
  // The calls below are not about time: a limit a busy machine cannot reach (issue 29).
  runtime.open("test:0").set_timeout(vgpu::kDefaultTimeout);
  const vgpu::Selection s = runtime.explain(
      "doubling", {n}, [](const vgpu::DeviceInfo&, const vgpu::Shape& sh) { return doubling_plan(sh[0]); });
  INFO(s.describe());
  CHECK(s.device == "test:0");
  CHECK(s.source != vgpu::SelectionSource::fallback);
  run(0, 14);
  CHECK(db.device().info().id() == "test:0");

  // A timeout that lost the device (a GPU wait that gave up): still no demotion, and the next
  // call recovers test:0 in place; the kernel survives it (nothing is built again).
  const vgpu::Device before = runtime.open("test:0");
  const std::uint64_t misses = db.misses();
  knobs[0]->timeout_lost = true;
  REQUIRE_VGPU_ERROR(timeout, "now lost", run(0, 15));
  knobs[0]->timeout_lost = false;
  CHECK(before.lost());
  run(0, 16);
  CHECK(db.device().info().id() == "test:0");
  CHECK(db.device() == before);
  CHECK(!db.device().lost());
  CHECK(before.counters().recoveries == 1);
  CHECK(db.misses() == misses);
  CHECK(
      runtime
          .explain("doubling", {n}, [](const vgpu::DeviceInfo&, const vgpu::Shape& sh) { return doubling_plan(sh[0]); })
          .source != vgpu::SelectionSource::fallback);
}

}  // namespace vgpu_test
