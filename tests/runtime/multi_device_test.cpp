// SPDX-License-Identifier: Apache-2.0
// tests/runtime/multi_device_test.cpp — several devices in one process (issue 18): VGPU_CPU_DEVICES,
// DeviceSet, Cache(DeviceSet)'s sharded batches and split matmul, a failed device's share rerun.
#include "support/catch.hpp"

#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/expect_error.hpp"
#include "support/multi_device.hpp"
#include "support/numerics.hpp"
#include "support/scoped_env.hpp"
#include "support/test_backend.hpp"
#include "vgpu/testing.hpp"
#include "vgpu/vgpu.hpp"

using vgpu_test::compare;
using vgpu_test::cpu_options;
using vgpu_test::matmul_reference;
using vgpu_test::MultiSetup;
using vgpu_test::random_floats;

namespace {

vgpu::Matrix random_matrix(std::uint32_t r, std::uint32_t c, std::uint64_t seed) {
  vgpu::Matrix m(r, c);
  m.data = random_floats(std::size_t{r} * c, seed);
  return m;
}

// Checks c = a·b against the double reference within matmul's tolerance.
void check_product(const vgpu::Matrix& a, const vgpu::Matrix& b, const vgpu::Matrix& c) {
  REQUIRE(c.rows == a.rows);
  REQUIRE(c.cols == b.cols);
  const auto cmp = compare(c.data, matmul_reference(a.data, b.data, a.rows, a.cols, b.cols));
  INFO(a.rows << "x" << a.cols << "x" << b.cols << ": " << cmp.describe());
  REQUIRE(cmp.ok());
}

std::vector<std::pair<vgpu::Matrix, vgpu::Matrix>> random_batch(std::size_t count, std::uint32_t m, std::uint32_t k,
                                                                std::uint32_t n) {
  std::vector<std::pair<vgpu::Matrix, vgpu::Matrix>> pairs;
  for (std::size_t i = 0; i < count; ++i)
    pairs.emplace_back(random_matrix(m, k, 100 + 2 * i), random_matrix(k, n, 101 + 2 * i));
  return pairs;
}

}  // namespace

TEST_CASE("VGPU_CPU_DEVICES exposes N logical CPU devices with their own fingerprints", "[multi_device]") {
  vgpu::Runtime one(cpu_options(1));
  vgpu::Runtime four(cpu_options(4));
  const auto d1 = one.devices();
  const auto d4 = four.devices();
  REQUIRE(d1.size() == 1);
  REQUIRE(d4.size() == 4);
  for (std::uint32_t i = 0; i < 4; ++i) {
    CHECK(d4[i].id() == "cpu:" + std::to_string(i));
    for (std::uint32_t j = 0; j < i; ++j) CHECK(d4[i].fingerprint.hash != d4[j].fingerprint.hash);
  }
  // cpu:0 keeps the one-device fingerprint: caches made with N=1 stay warm.
  CHECK(d4[0].fingerprint.hash == d1[0].fingerprint.hash);
  CHECK(four.open("cpu:3").info().index == 3);
  REQUIRE_VGPU_ERROR(unavailable, "cpu:4", four.open("cpu:4"));
  REQUIRE_VGPU_ERROR(unavailable, "cpu:1", one.open("cpu:1"));
  REQUIRE_VGPU_ERROR(invalid_argument, "cpu_devices", vgpu::Runtime(cpu_options(0)));
  {
    vgpu_test::ScopedEnv env("VGPU_CPU_DEVICES", "3");
    vgpu::RuntimeOptions o = cpu_options(1);
    o.cpu_devices.reset();  // the variable applies
    vgpu::Runtime from_env(o);
    CHECK(from_env.devices().size() == 3);
  }
}

TEST_CASE("DeviceSet is checked when it is made", "[multi_device]") {
  vgpu::Runtime rt(cpu_options(4));
  const vgpu::DeviceSet s(rt, {"cpu:2", "cpu:0"});
  CHECK(s.ids() == std::vector<std::string>{"cpu:2", "cpu:0"});
  CHECK(s.open(0).info().id() == "cpu:2");
  CHECK(vgpu::DeviceSet::all(rt).size() == 4);
  CHECK(vgpu::DeviceSet::all(rt, [](const vgpu::DeviceInfo& d) { return d.index % 2 == 1; }).ids() ==
        std::vector<std::string>{"cpu:1", "cpu:3"});
  REQUIRE_VGPU_ERROR(invalid_argument, "empty", vgpu::DeviceSet(rt, std::vector<std::string>{}));
  REQUIRE_VGPU_ERROR(invalid_argument, "twice", vgpu::DeviceSet(rt, {"cpu:1", "cpu:1"}));
  REQUIRE_VGPU_ERROR(invalid_argument, "does not exist", vgpu::DeviceSet(rt, {"cpu:0", "cpu:9"}));
  REQUIRE_VGPU_ERROR(invalid_argument, "not backend:index", vgpu::DeviceSet(rt, {"gpu:0"}));
  REQUIRE_VGPU_ERROR(invalid_argument, "not backend:index", vgpu::DeviceSet(rt, {"cpu"}));
  REQUIRE_VGPU_ERROR(invalid_argument, "no device is left",
                     vgpu::DeviceSet::all(rt, [](const vgpu::DeviceInfo&) { return false; }));
  REQUIRE_VGPU_ERROR(invalid_argument, "past", s.open(2));
  {
    vgpu_test::ScopedEnv env("VGPU_DEVICES", "cpu:3, cpu:1");
    vgpu::Runtime from_env(cpu_options(4));
    CHECK(vgpu::DeviceSet::from_config(from_env).ids() == std::vector<std::string>{"cpu:3", "cpu:1"});
  }
  {
    vgpu_test::ScopedEnv env("VGPU_DEVICES", "cpu:0,,cpu:1");
    vgpu::Runtime from_env(cpu_options(4));
    REQUIRE_VGPU_ERROR(invalid_argument, "device 2 is empty", vgpu::DeviceSet::from_config(from_env));
  }
  CHECK(vgpu::DeviceSet::from_config(rt).size() == 4);  // unset: every device
}

TEST_CASE("split_by_weight sums to the items, in proportion, largest remainder", "[multi_device]") {
  using V = std::vector<std::uint32_t>;
  CHECK(vgpu::split_by_weight({1, 1}, 1) == V{1, 0});
  CHECK(vgpu::split_by_weight({1, 1, 1, 1}, 3) == V{1, 1, 1, 0});
  CHECK(vgpu::split_by_weight({4, 2, 1}, 35) == V{20, 10, 5});
  CHECK(vgpu::split_by_weight({0, 1}, 17) == V{0, 17});
  CHECK(vgpu::split_by_weight({0.2, 0.8}, 0) == V{0, 0});
  CHECK(vgpu::split_by_weight({1, 2, 3}, 1000) == V{167, 333, 500});
  REQUIRE_VGPU_ERROR(invalid_argument, "weights", vgpu::split_by_weight({0, 0}, 4));
  REQUIRE_VGPU_ERROR(invalid_argument, "weights", vgpu::split_by_weight({}, 4));
}

TEST_CASE("A sharded batch follows the devices' measured speeds and is right", "[multi_device]") {
  // test:i adds its latency to every dispatch: weights 1/t are 4:2:1.
  MultiSetup ms({2000, 4000, 8000}, "multi-speeds");
  vgpu::Runtime& rt = ms.rt;
  vgpu::Cache cache(ms.set);
  const auto pairs = random_batch(35, 17, 33, 9);
  const auto out = cache.matmul_batch(pairs);
  REQUIRE(out.size() == pairs.size());
  for (std::size_t i = 0; i < pairs.size(); ++i) check_product(pairs[i].first, pairs[i].second, out[i]);
  const vgpu::MultiStats s = cache.multi_stats();
  INFO("shares " << s.last_shares[0] << "/" << s.last_shares[1] << "/" << s.last_shares[2]);
  CHECK(s.batches == 1);
  CHECK(s.failures == 0);
  // Expected 20/10/5; the calibration's timings carry the CPU's own few µs and scheduling noise.
  CHECK(s.last_shares[0] >= 17);
  CHECK(s.last_shares[0] <= 23);
  CHECK(s.last_shares[1] >= 7);
  CHECK(s.last_shares[1] <= 13);
  CHECK(s.last_shares[2] >= 2);
  CHECK(s.last_shares[2] <= 7);
  CHECK(s.last_shares[0] + s.last_shares[1] + s.last_shares[2] == 35);
  CHECK(s.items == std::vector<std::uint64_t>{s.last_shares[0], s.last_shares[1], s.last_shares[2]});
  // Each device ran its own share: the dispatch counts are the shares (calibration's runs aside).
  const auto w = vgpu::DeviceSet::all(rt).weights("matmul", {17, 33, 9});
  CHECK(w[0] > w[1]);
  CHECK(w[1] > w[2]);
}

TEST_CASE("A device that fails mid-batch has its share rerun on the others", "[multi_device]") {
  MultiSetup ms({300, 300, 300}, "multi-fail");
  auto& knobs = ms.knobs;
  vgpu::Cache cache(ms.set);
  const auto pairs = random_batch(30, 17, 5, 3);
  (void)cache.matmul_batch(pairs);  // calibrates; every device works
  REQUIRE(cache.multi_stats().failures == 0);

  knobs[1]->lose_next = 1000;  // test:1 is lost at every dispatch, its recovery's retry too
  const auto out = cache.matmul_batch(pairs);
  for (std::size_t i = 0; i < pairs.size(); ++i) check_product(pairs[i].first, pairs[i].second, out[i]);
  vgpu::MultiStats s = cache.multi_stats();
  CHECK(s.failures == 1);
  CHECK(s.rerun_items == s.last_shares[1]);
  CHECK(s.rerun_items > 0);
  REQUIRE(s.last_failures.size() == 1);
  CHECK(s.last_failures[0].find("test:1") == 0);

  // Demoted for matmul's size class: the next batch leaves test:1 out from the start.
  const auto again = cache.matmul_batch(pairs);
  for (std::size_t i = 0; i < pairs.size(); ++i) check_product(pairs[i].first, pairs[i].second, again[i]);
  s = cache.multi_stats();
  CHECK(s.last_shares[1] == 0);
  CHECK(s.failures == 1);

  // Every device failing: a clear error, never a wrong result.
  knobs[0]->fail_dispatch = true;
  knobs[2]->fail_dispatch = true;
  REQUIRE_VGPU_ERROR(unavailable, "every device of the set", (void)cache.matmul_batch(pairs));
}

TEST_CASE("A device lost mid-batch recovers in place and the batch is right", "[multi_device]") {
  MultiSetup ms(3);
  vgpu::Runtime& rt = ms.rt;
  vgpu::Cache cache(ms.set);
  const auto pairs = random_batch(12, 8, 8, 8);
  (void)cache.matmul_batch(pairs);
  const vgpu::Device lost = rt.open("cpu:2");
  const std::uint64_t recoveries = lost.counters().recoveries;
  vgpu::testing::force_device_lost(lost, vgpu::testing::LossPoint::next_wait);
  const auto out = cache.matmul_batch(pairs);
  for (std::size_t i = 0; i < pairs.size(); ++i) check_product(pairs[i].first, pairs[i].second, out[i]);
  CHECK(rt.open("cpu:2").counters().recoveries == recoveries + 1);
}

TEST_CASE("A split matmul over 4 CPU devices is right at awkward shapes", "[multi_device]") {
  MultiSetup ms(4);
  vgpu::Cache cache(ms.set);
  CHECK(cache.split_min_work() == vgpu::Cache::kSplitMinWork);
  {  // below the threshold: one device
    const auto a = random_matrix(17, 33, 1), b = random_matrix(33, 9, 2);
    check_product(a, b, cache.matmul(a, b));
    CHECK(cache.multi_stats().unsplit == 1);
    CHECK(cache.multi_stats().splits == 0);
  }
  cache.set_split_min_work(0);
  struct Case {
    std::uint32_t m, k, n;
  };
  std::uint64_t splits = 0;
  for (const Case c : {Case{1, 1, 1}, Case{17, 33, 9}, Case{1000, 17, 1000}, Case{3, 5, 7}, Case{2, 1, 4}}) {
    const auto a = random_matrix(c.m, c.k, c.m * 7 + c.k), b = random_matrix(c.k, c.n, c.n * 11 + 1);
    const std::vector<std::uint64_t> before = cache.multi_stats().items;
    check_product(a, b, cache.matmul(a, b));
    const vgpu::MultiStats s = cache.multi_stats();
    if (c.m > 1) ++splits;
    CHECK(s.splits == splits);
    std::uint64_t rows = 0, used = 0;
    for (std::size_t i = 0; i < 4; ++i) {
      rows += s.items[i] - before[i];
      used += s.items[i] > before[i];
    }
    CHECK(rows == c.m);  // every row of C once
    if (c.m >= 4) CHECK(used == 4);
    if (c.m > 1 && c.m < 4) CHECK(used == c.m);  // fewer rows than devices: one row each
  }
}

TEST_CASE("A set over the software GPUs (lavapipe, llvmpipe) and the CPU is right", "[multi_device]") {
  MultiSetup ms(MultiSetup::every_backend);
  const vgpu::DeviceSet& set = ms.set;
  if (set.size() < 2) {
    WARN("skipped: only " << set.size() << " device here (no lavapipe/llvmpipe)");
    return;
  }
  vgpu::Cache cache(set);
  const auto pairs = random_batch(7, 17, 33, 9);
  const auto out = cache.matmul_batch(pairs);
  for (std::size_t i = 0; i < pairs.size(); ++i) check_product(pairs[i].first, pairs[i].second, out[i]);
  cache.set_split_min_work(0);
  const auto a = random_matrix(17, 33, 3), b = random_matrix(33, 9, 4);
  check_product(a, b, cache.matmul(a, b));
  CHECK(cache.multi_stats().splits == 1);
}

TEST_CASE("VGPU_CPU_DEVICES out of range is a warning and one device", "[multi_device]") {
  for (const char* bad : {"0", "65", "two", "-1"}) {
    vgpu_test::ScopedEnv env("VGPU_CPU_DEVICES", bad);
    INFO("VGPU_CPU_DEVICES=" << bad);
    CHECK(vgpu::Config::from_env().cpu_devices == 1);
  }
  vgpu_test::ScopedEnv env("VGPU_CPU_DEVICES", "64");
  CHECK(vgpu::Config::from_env().cpu_devices == 64);
}

TEST_CASE("A Cache over a set serves several threads at once", "[multi_device]") {
  MultiSetup ms(3);
  vgpu::Cache cache(ms.set);
  cache.set_split_min_work(0);
  const auto pairs = random_batch(9, 17, 33, 9);
  std::vector<std::vector<vgpu::Matrix>> outs(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < outs.size(); ++t)
    threads.emplace_back([&, t] {
      outs[t] =
          t % 2 ? cache.matmul_batch(pairs) : std::vector<vgpu::Matrix>{cache.matmul(pairs[t].first, pairs[t].second)};
    });
  for (std::thread& t : threads) t.join();
  for (std::size_t t = 0; t < outs.size(); ++t) {
    if (t % 2) {
      REQUIRE(outs[t].size() == pairs.size());
      for (std::size_t i = 0; i < pairs.size(); ++i) check_product(pairs[i].first, pairs[i].second, outs[t][i]);
    } else {
      REQUIRE(outs[t].size() == 1);
      check_product(pairs[t].first, pairs[t].second, outs[t][0]);
    }
  }
  CHECK(cache.multi_stats().batches == 2);
  CHECK(cache.multi_stats().splits == 2);
}
