// SPDX-License-Identifier: Apache-2.0
// tests/selection/background_test.cpp — serve now, calibrate in the background (issue 17): a call whose
// device is still being chosen runs on a ready device (the CPU) at once, the calibration (and
// the slow device's compile) runs on a background thread, later calls switch over; the switch
// shows in counters and in explain; VGPU_BACKGROUND=0 waits instead; a stored choice whose
// device changed is served while it is rechecked; exit with background work in flight is clean.
//
// The test backend's devices stand for the machine: test:0 is typed as the CPU (ready, slow:
// 3 ms a dispatch), test:1 a discrete GPU (no added latency) whose compile the test holds or
// slows down, as a driver compiling a big pipeline would.
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/cache_fixtures.hpp"
#include "support/catch.hpp"
#include "support/helper_path.hpp"
#include "support/numerics.hpp"
#include "support/scoped_env.hpp"
#include "support/test_backend.hpp"
#include "vgpu/vgpu.hpp"

#ifndef VGPU_BACKGROUND_CHILD
#error "VGPU_BACKGROUND_CHILD (path of vgpu-test-background-child) must be defined by the build"
#endif

namespace {

using Knobs = std::vector<std::shared_ptr<vgpu_test::TestDeviceKnobs>>;

/// test:0 a slow CPU-typed device, test:1 a fast discrete GPU-typed one.
Knobs cpu_and_gpu(const std::string& salt) {
  Knobs k = vgpu_test::test_devices({3000, 0}, salt);
  k[0]->type = vgpu::DeviceType::cpu;
  k[1]->type = vgpu::DeviceType::discrete_gpu;
  return k;
}

/// Options over knobs with background work on or off and the cache in dir (empty: disabled).
vgpu::RuntimeOptions options(const Knobs& knobs, bool background, const std::filesystem::path& dir = {}) {
  vgpu::RuntimeOptions o = vgpu_test::test_runtime_options(knobs);
  o.background = background;
  if (dir.empty())
    o.cache_enabled = false;
  else
    o.cache_dir = dir;
  return o;
}

/// Runs axpy (y = a*x + y, n = 1000) through db and checks it against a double reference.
void check_axpy(vgpu::KernelDatabase& db, std::uint64_t seed) {
  const std::uint64_t n = 1000;
  std::vector<float> a{0.75f};
  auto x = vgpu_test::random_floats(n, seed), y = vgpu_test::random_floats(n, seed + 1);
  const vgpu_test::Reference ref = vgpu_test::axpy_reference(a[0], x, y);
  const vgpu::TensorArg args[] = {vgpu::TensorArg(std::as_const(a).data(), {1}),
                                  vgpu::TensorArg(std::as_const(x).data(), {n}), vgpu::TensorArg(y.data(), {n})};
  db.call("axpy", {n}, args);
  const vgpu_test::Comparison c = vgpu_test::compare(y, ref);
  INFO(c.describe());
  CHECK(c.ok());
}

/// Waits (at most 10 s) until pred holds; returns whether it did.
template <class Pred>
bool eventually(Pred pred) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace

TEST_CASE("a first call runs on the CPU while the slow device compiles and is measured in the background",
          "[background]") {
  const Knobs knobs = cpu_and_gpu(vgpu::test::unique_name("bg-serve"));
  knobs[1]->hold_compile = true;  // test:1's driver is still compiling
  vgpu::Runtime runtime(options(knobs, true));
  vgpu::KernelDatabase db(runtime);

  check_axpy(db, 1);  // answered now, by the CPU, with test:1's compile still held
  CHECK(knobs[0]->dispatches >= 1);
  CHECK(knobs[1]->compiles_done == 0);
  CHECK(db.interim_calls() == 1);
  const vgpu::Selection meanwhile = runtime.explain("axpy", {1000});
  INFO(meanwhile.describe());
  CHECK(meanwhile.source == vgpu::SelectionSource::interim);
  CHECK(meanwhile.device == "test:0");
  check_axpy(db, 2);  // still the CPU: nothing blocks on the compile
  CHECK(db.interim_calls() == 2);
  CHECK(runtime.background_stats().interim == 1);
  CHECK(runtime.background_stats().finished == 0);
  // The background calibration has reached test:1's compile.
  CHECK(eventually([&] { return knobs[1]->compiles_started >= 1; }));

  knobs[1]->hold_compile = false;
  REQUIRE(runtime.settle(std::chrono::seconds(30)));
  const vgpu::BackgroundStats b = runtime.background_stats();
  CHECK(b.finished == 1);
  CHECK(b.switches == 1);
  CHECK(b.failed == 0);
  const vgpu::Selection after = runtime.explain("axpy", {1000});
  INFO(after.describe());
  CHECK(after.source == vgpu::SelectionSource::calibrated);
  CHECK(after.device == "test:1");

  const std::uint64_t cpu_before = knobs[0]->dispatches, gpu_before = knobs[1]->dispatches;
  check_axpy(db, 3);  // switched: the same op, on test:1, with results as right
  CHECK(knobs[1]->dispatches > gpu_before);
  CHECK(knobs[0]->dispatches == cpu_before);
  CHECK(db.interim_calls() == 2);
  check_axpy(db, 4);
  CHECK(knobs[0]->dispatches == cpu_before);
}

TEST_CASE("with background work off the first call waits for the calibration", "[background]") {
  const Knobs knobs = cpu_and_gpu(vgpu::test::unique_name("bg-off"));
  knobs[1]->compile_delay_ms = 50;
  vgpu::Runtime runtime(options(knobs, false));
  CHECK(!runtime.config().background);
  vgpu::KernelDatabase db(runtime);
  check_axpy(db, 5);
  CHECK(knobs[1]->compiles_done >= 1);
  CHECK(db.interim_calls() == 0);
  CHECK(runtime.background_stats().interim == 0);
  const vgpu::Selection s = runtime.explain("axpy", {1000});
  CHECK(s.source == vgpu::SelectionSource::calibrated);
  CHECK(s.device == "test:1");
}

TEST_CASE("VGPU_BACKGROUND is read and checked", "[background]") {
  {
    vgpu_test::ScopedEnv env("VGPU_BACKGROUND", "0");
    CHECK(!vgpu::Config::from_env().background);
  }
  {
    vgpu_test::ScopedEnv env("VGPU_BACKGROUND", "1");
    CHECK(vgpu::Config::from_env().background);
  }
  vgpu_test::ScopedEnv env("VGPU_BACKGROUND", "sometimes");
  CHECK(vgpu::Config::from_env().background);  // a bad value warns and keeps the default
}

TEST_CASE("explain with nothing in flight calibrates in the foreground", "[background]") {
  const Knobs knobs = cpu_and_gpu(vgpu::test::unique_name("bg-explain"));
  vgpu::Runtime runtime(options(knobs, true));
  const vgpu::Selection s = runtime.explain("axpy", {1000});
  CHECK(s.source == vgpu::SelectionSource::calibrated);
  CHECK(s.device == "test:1");
  CHECK(runtime.background_stats().interim == 0);
}

TEST_CASE("a stored choice whose devices changed is served while it is rechecked in the background", "[background]") {
  vgpu::test::TempDir dir("bg-recheck-");
  const std::string salt = vgpu::test::unique_name("bg-recheck");
  {
    vgpu::Runtime first(options(cpu_and_gpu(salt), false, dir.path));
    REQUIRE(first.explain("axpy", {1000}).device == "test:1");
  }
  {
    // Same fingerprints: the stored choice is fresh, nothing runs in the background.
    vgpu::Runtime same(options(cpu_and_gpu(salt), true, dir.path));
    const vgpu::Selection s = same.choose("axpy", {1000});
    CHECK(s.source == vgpu::SelectionSource::persisted);
    CHECK(same.background_stats().interim == 0);
  }
  // A driver update: every fingerprint changes. The old choice serves at once, as an interim
  // selection, and is measured again in the background against the others.
  const Knobs changed = cpu_and_gpu(salt + "-new-driver");
  vgpu::Runtime second(options(changed, true, dir.path));
  const vgpu::Selection interim = second.choose("axpy", {1000});
  INFO(interim.describe());
  CHECK(interim.source == vgpu::SelectionSource::interim);
  CHECK(interim.device == "test:1");
  REQUIRE(!interim.candidates.empty());
  CHECK(interim.candidates.front().note.find("rechecked in the background because the devices of test changed") !=
        std::string::npos);
  CHECK(second.background_stats().rechecks == 1);
  REQUIRE(second.settle(std::chrono::seconds(30)));
  CHECK(second.background_stats().finished == 1);
  CHECK(second.background_stats().switches == 0);  // test:1 is still the fastest
  const vgpu::Selection rechecked = second.explain("axpy", {1000});
  INFO(rechecked.describe());
  CHECK(rechecked.source == vgpu::SelectionSource::calibrated);
  CHECK(rechecked.device == "test:1");
  CHECK(changed[0]->dispatches >= 1);  // the recheck measured the others too
  // ...and stored it: a third process with the new driver follows it without measuring.
  const Knobs again = cpu_and_gpu(salt + "-new-driver");
  vgpu::Runtime third(options(again, true, dir.path));
  CHECK(third.choose("axpy", {1000}).source == vgpu::SelectionSource::persisted);
  CHECK(again[0]->dispatches == 0);
  CHECK(again[1]->dispatches == 0);
}

TEST_CASE("a user op whose plan changed is rechecked", "[background]") {
  vgpu::test::TempDir dir("bg-plan-");
  const std::string salt = vgpu::test::unique_name("bg-plan");
  // The same op under a user's id; "version" stands for the user's kernel source text.
  const auto factory = [](std::string version) {
    return [version](const vgpu::DeviceInfo& d, const vgpu::Shape& shape) {
      vgpu::KernelPlan p = vgpu::ops::axpy(d, shape.at(0));
      for (vgpu::DialectSource& ds : p.source.sources) ds.version = version;
      return p;
    };
  };
  {
    vgpu::Runtime first(options(cpu_and_gpu(salt), false, dir.path));
    REQUIRE(first.explain("my_axpy", {1000}, factory("v1")).device == "test:1");
  }
  {
    vgpu::Runtime same(options(cpu_and_gpu(salt), true, dir.path));
    CHECK(same.choose("my_axpy", {1000}, factory("v1")).source == vgpu::SelectionSource::persisted);
  }
  vgpu::Runtime edited(options(cpu_and_gpu(salt), true, dir.path));
  const vgpu::Selection s = edited.choose("my_axpy", {1000}, factory("v2"));
  INFO(s.describe());
  CHECK(s.source == vgpu::SelectionSource::interim);
  CHECK(s.device == "test:1");
  REQUIRE(!s.candidates.empty());
  CHECK(s.candidates.front().note.find("plan changed") != std::string::npos);
  REQUIRE(edited.settle(std::chrono::seconds(30)));
  CHECK(edited.explain("my_axpy", {1000}, factory("v2")).source == vgpu::SelectionSource::calibrated);
}

TEST_CASE("a process exits cleanly with a background calibration in flight", "[background]") {
  // destroy: the runtime goes out of scope; exit: a runtime never destroyed (as the global one)
  // and std::exit, so only the exit handler can stop the worker. The child's slow device takes
  // 1.5 s per compile: the run must end with the work cancelled or joined, exit status 0.
  for (const std::string mode : {"destroy", "exit"}) {
    INFO(mode);
    const vgpu::test::ChildRun run =
        vgpu::test::run_child_command("env -u VGPU_DEVICE -u VGPU_BACKEND -u VGPU_BACKGROUND " +
                                      vgpu::test::quoted(vgpu::test::helper_path(VGPU_BACKGROUND_CHILD)) + " " + mode +
                                      " " + vgpu::test::unique_name("bg-exit") + " 2>&1");
    INFO(run.output);
    CHECK(run.status == 0);
    CHECK(run.values.count("result") == 1);
    CHECK(run.output.find("result=ok") != std::string::npos);
    CHECK(run.output.find("source=interim") != std::string::npos);
    CHECK(run.output.find("terminate") == std::string::npos);
  }
}
