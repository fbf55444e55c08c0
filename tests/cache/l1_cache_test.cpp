// SPDX-License-Identifier: Apache-2.0
// tests/cache/l1_cache_test.cpp — the L1 in-RAM kernel cache: single-flight builds, failures that
// reach every waiter and are not cached, LRU eviction, capacity changes; then the same
// behaviour through a Device, the kernel key's sensitivity, and VGPU_L1_CAPACITY.
#include "support/catch.hpp"

#include <atomic>
#include <chrono>
#include <latch>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "support/scoped_env.hpp"
#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/cache/memory_cache.hpp"
#include "vgpu/vgpu.hpp"

namespace vgpu_test {
namespace {

using vgpu::cache::Lookup;
using Cache = vgpu::cache::MemoryCache<int, std::shared_ptr<int>>;
using namespace std::chrono_literals;

// Blocks until `waiters` other threads are waiting on an in-flight build, so the single-flight
// assertions below do not depend on thread scheduling. No time bound: one that ran out on a busy
// machine would let a late thread hit the finished entry and fail the counts (issue 29); a cache
// whose single flight is broken hangs here instead, and ctest's timeout fails the test.
void wait_for_joiners(const Cache& cache, std::uint64_t waiters) {
  while (cache.stats().joined < waiters) std::this_thread::sleep_for(1ms);
}

vgpu::CompileOptions with_define(const vgpu::CompileOptions& base, const std::string& value) {
  vgpu::CompileOptions o = base;
  o.defines["VGPU_TEST_L1"] = value;
  return o;
}

}  // namespace

TEST_CASE("MemoryCache: 16 threads asking for one missing key build it once", "[l1]") {
  constexpr int kThreads = 16;
  Cache cache(8);
  std::atomic<int> builds{0};
  std::latch start(kThreads);
  std::vector<std::shared_ptr<int>> got(kThreads);
  std::vector<Lookup> how(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      auto [value, lookup] = cache.get_or_build(7, [&] {
        ++builds;
        wait_for_joiners(cache, kThreads - 1);
        std::this_thread::sleep_for(50ms);
        return std::make_shared<int>(42);
      });
      got[t] = value;
      how[t] = lookup;
    });
  for (auto& th : threads) th.join();
  CHECK(builds == 1);
  int built = 0, joined = 0;
  for (int t = 0; t < kThreads; ++t) {
    REQUIRE(got[t]);
    CHECK(got[t] == got[0]);  // the very same object, not equal copies
    built += how[t] == Lookup::built;
    joined += how[t] == Lookup::joined;
  }
  CHECK(*got[0] == 42);
  CHECK(built == 1);
  CHECK(joined == kThreads - 1);
  const auto s = cache.stats();
  CHECK(s.builds == 1);
  CHECK(s.misses == 1);
  CHECK(s.joined == kThreads - 1);
  CHECK(s.hits == 0);
  CHECK(s.builds + s.joined + s.hits == kThreads);
  CHECK(s.size == 1);
  // Later lookups are plain hits.
  CHECK(cache
            .get_or_build(7,
                          [&]() -> std::shared_ptr<int> {
                            FAIL("rebuilt a cached key");
                            return {};
                          })
            .second == Lookup::hit);
  CHECK(cache.stats().hits == 1);
}

TEST_CASE("MemoryCache: a failed build reaches every waiter and is not cached", "[l1]") {
  constexpr int kThreads = 8;
  Cache cache(4);
  std::atomic<int> builds{0}, caught{0};
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      start.arrive_and_wait();
      try {
        cache.get_or_build(1, [&]() -> std::shared_ptr<int> {
          ++builds;
          wait_for_joiners(cache, kThreads - 1);
          std::this_thread::sleep_for(50ms);
          throw std::runtime_error("compiler exploded");
        });
      } catch (const std::runtime_error& e) {
        if (std::string(e.what()) == "compiler exploded") ++caught;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(builds == 1);
  CHECK(caught == kThreads);
  CHECK(cache.stats().failures == 1);
  CHECK(cache.stats().size == 0);
  CHECK_FALSE(cache.find(1).has_value());
  // The next call builds again, and succeeds.
  auto [value, how] = cache.get_or_build(1, [] { return std::make_shared<int>(5); });
  CHECK(how == Lookup::built);
  CHECK(*value == 5);
  CHECK(cache.stats().builds == 1);
}

TEST_CASE("MemoryCache: LRU eviction at capacity 3, held values stay alive, set_capacity", "[l1]") {
  Cache cache(3);
  auto make = [](int v) { return [v] { return std::make_shared<int>(v); }; };
  auto one = cache.get_or_build(1, make(1)).first;
  cache.get_or_build(2, make(2));
  auto two = cache.find(2);  // holds value 2 (and touches it)
  cache.get_or_build(3, make(3));
  CHECK(cache.get_or_build(1, make(-1)).second == Lookup::hit);  // touch 1: order is now 1, 3, 2
  one.reset();
  cache.get_or_build(4, make(4));  // evicts the least recently used: 2
  CHECK_FALSE(cache.find(2).has_value());
  CHECK(cache.find(1).has_value());
  CHECK(cache.find(3).has_value());
  CHECK(cache.find(4).has_value());
  CHECK(cache.stats().evictions == 1);
  CHECK(cache.stats().size == 3);
  REQUIRE(two.has_value());
  CHECK(**two == 2);  // evicted but still held: alive and intact
  CHECK(two->use_count() == 1);
  // Order now (most recent first): 4, 3, 1. Shrink to 1 keeps only 4.
  cache.set_capacity(1);
  CHECK(cache.stats().size == 1);
  CHECK(cache.stats().capacity == 1);
  CHECK(cache.stats().evictions == 3);
  CHECK(cache.find(4).has_value());
  CHECK_FALSE(cache.find(1).has_value());
  cache.set_capacity(0);  // clamped to 1
  CHECK(cache.stats().capacity == 1);
  CHECK(cache.erase(4));
  CHECK_FALSE(cache.erase(4));
  cache.get_or_build(5, make(5));
  cache.clear();
  CHECK(cache.stats().size == 0);
}

TEST_CASE("L1 through a Device: same source hits, different defines miss", "[l1][device]") {
  vgpu::Runtime rt(vgpu::RuntimeOptions{});  // a fresh device with an empty L1
  vgpu::Device device = rt.open("cpu:0");
  const vgpu::KernelPlan plan = vgpu::ops::add(device.info(), 16);
  const auto c0 = device.counters();
  vgpu::Kernel k1 = device.compile(plan.source, plan.options);
  vgpu::Kernel k2 = device.compile(plan.source, plan.options);
  auto d = device.counters() - c0;
  CHECK(d.compiles == 1);
  CHECK(d.l1_misses == 1);
  CHECK(d.l1_hits == 1);
  CHECK(k1.key_hex() == k2.key_hex());
  CHECK(k1.key_hex().size() == 32);
  vgpu::Kernel k3 = device.compile(plan.source, with_define(plan.options, "a"));
  d = device.counters() - c0;
  CHECK(d.compiles == 2);
  CHECK(k3.key_hex() != k1.key_hex());
  // Data and params are not part of the key: a plan for another n reuses the kernel.
  const vgpu::KernelPlan other_n = vgpu::ops::add(device.info(), 100000);
  CHECK(device.compile(other_n.source, other_n.options).key_hex() == k1.key_hex());
  CHECK((device.counters() - c0).compiles == 2);
}

TEST_CASE("KernelKey: differs whenever an input differs, equal for identical input", "[l1][key]") {
  vgpu::KernelSource src;
  src.name = "k";
  src.add_glsl("void main() {}");
  src.add_cuda("extern \"C\" __global__ void k() {}", "k");
  src.add_cpu_builtin("add");
  src.bindings = {{0, vgpu::Access::read, "a", {}}, {1, vgpu::Access::write, "b", {}}};
  src.params_size = 16;
  vgpu::CompileOptions opt;
  opt.defines["X"] = "1";
  const vgpu::DeviceFingerprint fp{"vendor=1;device=2;", 99};
  // The key of s compiled from its entry in dialect d.
  auto key = [](const vgpu::KernelSource& s, const vgpu::CompileOptions& o, const vgpu::DeviceFingerprint& f,
                std::string_view d = vgpu::dialect::glsl) {
    const vgpu::DialectSource* code = s.find(d);
    REQUIRE(code != nullptr);
    return vgpu::cache::make_kernel_key(s, *code, o, f);
  };
  const auto base = key(src, opt, fp);
  CHECK(base == key(src, opt, fp));
  CHECK(base.hex().size() == 32);
  auto differs = [&](vgpu::KernelSource s, vgpu::CompileOptions o, vgpu::DeviceFingerprint f,
                     std::string_view d = vgpu::dialect::glsl) { return !(key(s, o, f, d) == base); };
  auto s = src;
  s.add_glsl(src.find(vgpu::dialect::glsl)->code + " ");
  CHECK(differs(s, opt, fp));
  s = src, s.name = "k2";
  CHECK(differs(s, opt, fp));
  auto o = opt;
  o.defines["X"] = "2";
  CHECK(differs(src, o, fp));
  o = opt, o.defines["Y"] = "1";
  CHECK(differs(src, o, fp));
  o = opt, o.defines = {{"X1", ""}};  // "X"="1" vs "X1"="": the encoding must not run fields together
  CHECK(differs(src, o, fp));
  o = opt, o.workgroup_size = {32, 2, 1};
  CHECK(differs(src, o, fp));
  s = src, s.bindings[1].slot = 2;
  CHECK(differs(s, opt, fp));
  s = src, s.bindings[1].access = vgpu::Access::read_write;
  CHECK(differs(s, opt, fp));
  s = src, s.bindings.pop_back();
  CHECK(differs(s, opt, fp));
  s = src, s.params_size = 32;
  CHECK(differs(s, opt, fp));
  CHECK(differs(src, opt, vgpu::DeviceFingerprint{"vendor=1;device=3;", 99}));
  CHECK(differs(src, opt, fp, vgpu::dialect::cuda));
  // The same text under another dialect's name is another kernel.
  s = src, s.add(vgpu::DialectSource{"glsl_other", src.find(vgpu::dialect::glsl)->code, {}, {}, {}});
  CHECK(differs(s, opt, fp, "glsl_other"));
  // Each dialect's key covers that dialect's source, and only that one: another entry's text
  // does not change what this device compiles.
  const auto cuda = key(src, opt, fp, vgpu::dialect::cuda);
  s = src, s.add_cuda(src.find(vgpu::dialect::cuda)->code + " ", "k");
  CHECK_FALSE(key(s, opt, fp, vgpu::dialect::cuda) == cuda);
  CHECK(key(s, opt, fp) == base);
  s = src, s.add_cuda(src.find(vgpu::dialect::cuda)->code, "k2");
  CHECK_FALSE(key(s, opt, fp, vgpu::dialect::cuda) == cuda);
  const auto cpu = key(src, opt, fp, vgpu::dialect::cpu);
  s = src, s.add_cpu_builtin("mul");
  CHECK_FALSE(key(s, opt, fp, vgpu::dialect::cpu) == cpu);
  s = src, s.add_cpu_builtin("add", "2");
  CHECK_FALSE(key(s, opt, fp, vgpu::dialect::cpu) == cpu);
  // A callable's key follows its type and version.
  s = src, s.add_cpu([](const vgpu::CpuWorkgroup&) {});
  const auto fn1 = key(s, opt, fp, vgpu::dialect::cpu);
  CHECK_FALSE(fn1 == cpu);
  s.add_cpu([](const vgpu::CpuWorkgroup&) {});
  CHECK_FALSE(key(s, opt, fp, vgpu::dialect::cpu) == fn1);
}

TEST_CASE("VGPU_L1_CAPACITY bounds a new device's L1 (LRU through compile)", "[l1][device]") {
  std::unique_ptr<vgpu::Runtime> rt;
  vgpu::Device device;
  {
    ScopedEnv env("VGPU_L1_CAPACITY", "2");  // read when the device core is constructed
    rt = std::make_unique<vgpu::Runtime>(vgpu::RuntimeOptions{});
    device = rt->open("cpu:0");
  }
  const vgpu::KernelPlan plan = vgpu::ops::mul(device.info(), 8);
  const auto c0 = device.counters();
  vgpu::Kernel k1 = device.compile(plan.source, with_define(plan.options, "1"));
  device.compile(plan.source, with_define(plan.options, "2"));
  device.compile(plan.source, with_define(plan.options, "3"));  // evicts 1
  auto d = device.counters() - c0;
  CHECK(d.compiles == 3);
  CHECK(d.l1_evictions == 1);
  device.compile(plan.source, with_define(plan.options, "3"));  // hit; order 3, 2
  device.compile(plan.source, with_define(plan.options, "1"));  // miss; evicts 2
  device.compile(plan.source, with_define(plan.options, "3"));  // still there: hit
  d = device.counters() - c0;
  CHECK(d.compiles == 4);
  CHECK(d.l1_hits == 2);
  CHECK(d.l1_evictions == 2);
  // The evicted kernel handle the caller kept still dispatches.
  vgpu::Buffer a = device.create_buffer(32), b = device.create_buffer(32), out = device.create_buffer(32);
  const float two[8] = {2, 2, 2, 2, 2, 2, 2, 2};
  device.write(a, two, 32);
  device.write(b, two, 32);
  device.dispatch(k1, device.bind(k1, {{0, a}, {1, b}, {2, out}}), plan.steps[0].params, plan.steps[0].groups);
  float got[8] = {};
  device.read(out, got, 32);
  CHECK(std::vector<float>(got, got + 8) == std::vector<float>(8, 4.0f));

  // A bad value is ignored (with a warning): the default bound (512) applies.
  ScopedEnv env("VGPU_L1_CAPACITY", "zero");
  vgpu::Runtime rt2(vgpu::RuntimeOptions{});
  vgpu::Device fresh = rt2.open("cpu:0");
  for (int i = 0; i < 4; ++i) fresh.compile(plan.source, with_define(plan.options, std::to_string(i)));
  CHECK(fresh.counters().l1_evictions == 0);
}

}  // namespace vgpu_test
