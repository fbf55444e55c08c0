// SPDX-License-Identifier: Apache-2.0
// tests/runtime/kernel_database_test.cpp — KernelDatabase's key-first lookup and its locking: a fixed
// factory is asked once per (id, shape, device); factories and builds run without the
// database's lock, so a factory may call back into the database and other keys go on while one
// builds; concurrent first calls for one key build once.
#include "support/catch.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "support/expect_error.hpp"
#include "support/finishes.hpp"
#include "support/test_backend.hpp"
#include "vgpu/vgpu.hpp"

namespace vgpu_test {

using namespace std::chrono_literals;

TEST_CASE("KernelDatabase: a fixed factory is asked once per (id, shape), a varying one on every get", "[db]") {
  vgpu::Device device = vgpu::Runtime::global().open("cpu:0");
  vgpu::KernelDatabase db(device);
  std::atomic<int> fixed_calls{0}, varying_calls{0};
  db.add(
      "fixed_add",
      [&](const vgpu::DeviceInfo& info, const vgpu::Shape& s) {
        ++fixed_calls;
        return vgpu::ops::add(info, s[0]);
      },
      vgpu::PlanStability::fixed);
  db.add("varying_add", [&](const vgpu::DeviceInfo& info, const vgpu::Shape& s) {
    ++varying_calls;
    return vgpu::ops::add(info, s[0]);
  });
  auto k = db.get("fixed_add", {64});
  for (int i = 0; i < 100; ++i) CHECK(db.get("fixed_add", {64}) == k);
  CHECK(fixed_calls == 1);
  auto v = db.get("varying_add", {64});
  for (int i = 0; i < 10; ++i) CHECK(db.get("varying_add", {64}) == v);
  CHECK(varying_calls == 11);  // asked every time: its plan could have changed
  CHECK(db.report() == "KernelDB: 110 hits, 2 compiles");

  // A new shape asks again; re-registering drops the kernels and asks the new factory.
  db.get("fixed_add", {65});
  CHECK(fixed_calls == 2);
  db.add(
      "fixed_add",
      [&](const vgpu::DeviceInfo& info, const vgpu::Shape& s) {
        fixed_calls += 10;
        return vgpu::ops::add(info, s[0]);
      },
      vgpu::PlanStability::fixed);
  auto k2 = db.get("fixed_add", {64});
  CHECK(k2 != k);
  CHECK(fixed_calls == 12);
  // evict drops the kernel; the next get builds it again from the factory.
  db.evict("fixed_add");
  CHECK(db.get("fixed_add", {64}) != k2);
  CHECK(fixed_calls == 22);
}

TEST_CASE("KernelDatabase: a factory that calls back into the same database does not deadlock", "[db][threads]") {
  // The database lives on the heap: if the call hangs, the stuck thread still owns valid memory.
  auto db = std::make_shared<vgpu::KernelDatabase>(vgpu::Runtime::global().open("cpu:0"));
  auto wdb = std::weak_ptr<vgpu::KernelDatabase>(db);
  // "doubled_add" reuses the built-in add's plan, got from the same database.
  db->add("doubled_add", [wdb](const vgpu::DeviceInfo&, const vgpu::Shape& s) {
    vgpu::KernelPlan p = wdb.lock()->get("add", {s[0]})->plan();
    p.source.name = "doubled_add";
    return p;
  });
  std::vector<float> a(100, 1.5f), b(100, 2.0f), out(100, -1.0f);
  std::shared_ptr<vgpu::PersistentKernel> kernel;
  auto ok = std::make_shared<std::atomic<bool>>(false);
  REQUIRE(finishes([db, ok, &kernel] {
    kernel = db->get("doubled_add", {100});
    *ok = true;
  }));
  REQUIRE(*ok);
  (*kernel)({vgpu::TensorArg(a.data(), {100}), vgpu::TensorArg(b.data(), {100}), vgpu::TensorArg(out.data(), {100})});
  for (float x : out) CHECK(x == 3.5f);
  CHECK(db->misses() == 2);  // add and doubled_add

  // Asking for the very kernel being built is refused with a Fix hint (it would wait for itself),
  // and the failed build is not kept: the next get builds.
  auto recurse = std::make_shared<std::atomic<bool>>(true);
  db->add(
      "selfish",
      [wdb, recurse](const vgpu::DeviceInfo& info, const vgpu::Shape& s) {
        if (recurse->exchange(false)) wdb.lock()->get("selfish", s);
        return vgpu::ops::add(info, s[0]);
      },
      vgpu::PlanStability::fixed);
  auto refused = std::make_shared<std::optional<vgpu::Error>>();
  REQUIRE(finishes([db, refused] { *refused = catch_error([&] { db->get("selfish", {8}); }); }));
  REQUIRE(refused->has_value());
  check_error(**refused, vgpu::ErrorCategory::invalid_argument, "while this thread is building it");
  std::shared_ptr<vgpu::PersistentKernel> selfish;
  REQUIRE(finishes([db, &selfish] { selfish = db->get("selfish", {8}); }));
  CHECK(selfish != nullptr);
}

TEST_CASE("KernelDatabase: other keys go on while one kernel builds (no lock held over a build)", "[db][threads]") {
  auto db = std::make_shared<vgpu::KernelDatabase>(vgpu::Runtime::global().open("cpu:0"));
  (void)db->get("add", {64});
  struct Gate {
    std::mutex m;
    std::condition_variable cv;
    bool entered = false, released = false;
  };
  auto gate = std::make_shared<Gate>();
  bool released_in_time = false;
  // The slow factory waits (at most kHang) for the main thread to have used the database.
  db->add("slow", [gate, &released_in_time](const vgpu::DeviceInfo& info, const vgpu::Shape& s) {
    std::unique_lock lock(gate->m);
    gate->entered = true;
    gate->cv.notify_all();
    released_in_time = gate->cv.wait_for(lock, kHang, [&] { return gate->released; });
    return vgpu::ops::add(info, s[0]);
  });
  std::thread builder([db] { (void)db->get("slow", {32}); });
  {
    std::unique_lock lock(gate->m);
    REQUIRE(gate->cv.wait_for(lock, kHang, [&] { return gate->entered; }));
  }
  // While "slow" is being built: a hit, a different build and the counters all answer.
  CHECK(db->get("add", {64}) != nullptr);
  CHECK(db->get("mul", {64}) != nullptr);
  CHECK(db->size() == 2);
  {
    std::lock_guard lock(gate->m);
    gate->released = true;
    gate->cv.notify_all();
  }
  builder.join();
  CHECK(released_in_time);
  CHECK(db->size() == 3);
}

TEST_CASE("KernelDatabase: concurrent first calls for one key build once, the others wait for it", "[db][threads]") {
  vgpu::KernelDatabase db(vgpu::Runtime::global().open("cpu:0"));
  for (const auto stability : {vgpu::PlanStability::fixed, vgpu::PlanStability::varies}) {
    const std::string id = stability == vgpu::PlanStability::fixed ? "once_fixed" : "once_varies";
    INFO(id);
    std::atomic<int> factory_calls{0};
    db.add(
        id,
        [&](const vgpu::DeviceInfo& info, const vgpu::Shape& s) {
          ++factory_calls;
          std::this_thread::sleep_for(20ms);  // widens the window in which the others arrive
          return vgpu::ops::add(info, s[0]);
        },
        stability);
    const std::uint64_t misses_before = db.misses(), hits_before = db.hits();
    constexpr int kThreads = 8;
    std::vector<std::shared_ptr<vgpu::PersistentKernel>> got(kThreads);
    std::atomic<int> ready{0}, errors{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        ++ready;
        while (ready < kThreads) std::this_thread::yield();
        try {
          got[t] = db.get(id, {512});
        } catch (...) {
          ++errors;
        }
      });
    for (auto& th : threads) th.join();
    CHECK(errors == 0);
    for (const auto& k : got) CHECK(k == got[0]);
    CHECK(db.misses() - misses_before == 1);
    CHECK(db.hits() - hits_before == kThreads - 1);
    // A fixed factory runs once; a varying one is asked by every call, but builds once.
    if (stability == vgpu::PlanStability::fixed) CHECK(factory_calls == 1);
    if (stability == vgpu::PlanStability::varies) CHECK(factory_calls == kThreads);
  }
}

TEST_CASE("KernelDatabase: with selection, calibration runs without the database's lock", "[db][threads][select]") {
  // Two test-backend devices (the CPU with injected latency) and a salt of this run's own, so
  // no persisted choice answers: the first call calibrates, running the factory on each device.
  const std::string salt = "kernel-db-" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  std::vector<std::shared_ptr<TestDeviceKnobs>> knobs{test_device(0, salt), test_device(300, salt)};
  auto runtime = std::make_shared<vgpu::Runtime>(test_runtime_options(knobs));
  auto db = std::make_shared<vgpu::KernelDatabase>(*runtime);
  auto wdb = std::weak_ptr<vgpu::KernelDatabase>(db);
  auto reports = std::make_shared<std::atomic<int>>(0);
  // The factory reads the database it is registered in (as a logging factory might).
  db->add("reporting_add", [wdb, reports](const vgpu::DeviceInfo& info, const vgpu::Shape& s) {
    if (!wdb.lock()->report().empty()) ++*reports;
    return vgpu::ops::add(info, s[0]);
  });
  std::shared_ptr<vgpu::PersistentKernel> kernel;
  REQUIRE(finishes([runtime, db, &kernel] { kernel = db->get("reporting_add", {4096}); }));
  REQUIRE(kernel != nullptr);
  CHECK(*reports >= 2);  // calibration asked the factory for both devices
  CHECK(db->misses() == 1);
}

}  // namespace vgpu_test
