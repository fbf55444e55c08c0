// SPDX-License-Identifier: Apache-2.0
// tests/runtime/device_loss_test.cpp — device-loss recovery through the test backend (label device_loss):
// a device lost once recovers in place and KernelDatabase keeps it; one lost again within the
// relapse window of its recovery is demoted and calls fall back; a device that cannot be opened
// again makes the call throw device_lost with a Fix, leaves everything intact, and recovers at a
// later call; calls on several threads during repeated losses all stay right. (Each backend's
// own recovery: tests/contract/device_loss_test.cpp.)
#include "support/catch.hpp"

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

#include "support/expect_error.hpp"
#include "support/numerics.hpp"
#include "support/cache_fixtures.hpp"
#include "support/test_backend.hpp"
#include "vgpu/testing.hpp"
#include "vgpu/vgpu.hpp"

using namespace vgpu_test;

namespace {

using Knobs = std::vector<std::shared_ptr<TestDeviceKnobs>>;

Knobs devices(const std::vector<std::uint64_t>& latencies_us, const std::string& salt) {
  return test_devices(latencies_us, salt);
}

const vgpu::SelectionCandidate& candidate(const vgpu::Selection& s, const std::string& id) {
  for (const auto& c : s.candidates)
    if (c.device == id) return c;
  FAIL("no candidate " << id << " in " << s.describe());
  return s.candidates.front();
}

// y = a·x + y on 1000 elements through db, checked against the reference.
void check_axpy(vgpu::KernelDatabase& db, std::uint64_t seed) {
  const std::uint64_t n = 1000;
  const std::vector<float> a{0.75f};
  const auto x = random_floats(n, seed);
  auto y = random_floats(n, seed + 1);
  const Reference ref = axpy_reference(a[0], x, y);
  const vgpu::TensorArg args[] = {vgpu::TensorArg(a.data(), {1}), vgpu::TensorArg(x.data(), {n}),
                                  vgpu::TensorArg(y.data(), {n})};
  db.call("axpy", {n}, args);
  const Comparison c = compare(y, ref);
  INFO("seed " << seed << ": " << c.describe());
  CHECK(c.ok());
}

// Runs kernel (the add op at n elements) on random inputs and checks the sum.
void check_add(vgpu::PersistentKernel& kernel, std::uint32_t n, std::uint64_t seed) {
  const auto a = random_floats(n, seed), b = random_floats(n, seed + 1);
  std::vector<float> out(n, -1e30f);
  kernel({vgpu::TensorArg(a.data(), {n}), vgpu::TensorArg(b.data(), {n}), vgpu::TensorArg(out.data(), {n})});
  std::size_t wrong = 0;
  for (std::uint32_t i = 0; i < n; ++i) wrong += out[i] != a[i] + b[i];
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("test: a device lost once recovers and is kept, lost again within the relapse window it is demoted",
          "[device_loss][select]") {
  Knobs k = devices({0, 1000}, vgpu::test::unique_name("relapse"));
  vgpu::Runtime runtime(test_runtime_options(k));
  vgpu::KernelDatabase db(runtime);
  check_axpy(db, 10);
  REQUIRE(db.device().info().id() == "test:0");
  vgpu::Device first = db.device();
  const std::uint64_t opens = k[0]->opens;

  k[0]->lose_next = 1;  // lost during the call: recovered in place, the call retried on it
  check_axpy(db, 20);
  CHECK(first.counters().recoveries == 1);
  CHECK(first.counters().device_losses == 1);
  CHECK(k[0]->opens == opens + 1);
  CHECK(db.device().info().id() == "test:0");
  CHECK(!candidate(runtime.explain("axpy", {1000}), "test:0").demoted);

  k[0]->lose_next = 1;  // lost again at once: a relapse. This call is still right...
  check_axpy(db, 30);
  CHECK(first.counters().recoveries == 2);
  const vgpu::Selection s = runtime.explain("axpy", {1000});
  INFO(s.describe());
  CHECK(s.device == "test:1");  // test:0 is demoted for this size class
  CHECK(s.source == vgpu::SelectionSource::fallback);
  check_axpy(db, 40);  // ...and the next ones run on test:1
  CHECK(db.device().info().id() == "test:1");
}

TEST_CASE("test: a device that cannot be opened again throws device_lost with a Fix, and a later call recovers it",
          "[device_loss]") {
  Knobs k = devices({0}, vgpu::test::unique_name("reopen"));
  vgpu::Runtime runtime(test_runtime_options(k));
  vgpu::Device device = runtime.open("test:0");
  const std::uint32_t n = 1000;
  vgpu::PersistentKernel add(device, vgpu::ops::plan("add", device.info(), {n}));
  check_add(add, n, 1);
  const vgpu::Buffer buffer = device.create_buffer(64);
  std::vector<std::uint8_t> bytes(64, 7), back(64, 0);
  device.write(buffer, bytes.data(), 64);

  k[0]->fail_open = true;
  vgpu::testing::force_device_lost(device);
  CHECK(runtime.open("test:0") == device);  // the runtime hands out the same Device, to be recovered
  REQUIRE_VGPU_ERROR(device_lost, "opening it again failed", device.read(buffer, back.data(), 64));
  REQUIRE_VGPU_ERROR(device_lost, "the next call on this Device tries again", device.create_buffer(64));
  const auto a = random_floats(n, 2), b = random_floats(n, 3);
  std::vector<float> out(n, 0.0f);
  REQUIRE_VGPU_ERROR(
      device_lost, "cannot be opened (injected)",
      add({vgpu::TensorArg(a.data(), {n}), vgpu::TensorArg(b.data(), {n}), vgpu::TensorArg(out.data(), {n})}));
  CHECK(device.lost());
  CHECK(device.counters().recoveries == 0);

  k[0]->fail_open = false;  // the next call recovers: the kernel works, the buffer wants its data again
  check_add(add, n, 4);
  CHECK(device.counters().recoveries == 1);
  CHECK(!device.lost());
  REQUIRE_VGPU_ERROR(device_lost, "write the data again", device.read(buffer, back.data(), 64));
  device.write(buffer, bytes.data(), 64);
  device.read(buffer, back.data(), 64);
  CHECK(back == bytes);
}

TEST_CASE("test: calls on four threads stay right while the device is lost and recovered again and again",
          "[device_loss][threads]") {
  Knobs k = devices({0}, vgpu::test::unique_name("threads"));
  vgpu::Runtime runtime(test_runtime_options(k));
  vgpu::Device device = runtime.open("test:0");
  constexpr int kThreads = 4, kCalls = 40, kLosses = 8;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::uint32_t n = 100 + 37 * t;
      vgpu::PersistentKernel add(device, vgpu::ops::plan("add", device.info(), {n}));
      for (int i = 0; i < kCalls; ++i) {
        const auto a = random_floats(n, t * 1000 + i), b = random_floats(n, t * 1000 + i + 500);
        std::vector<float> out(n, -1e30f);
        try {
          add({vgpu::TensorArg(a.data(), {n}), vgpu::TensorArg(b.data(), {n}), vgpu::TensorArg(out.data(), {n})});
          for (std::uint32_t j = 0; j < n; ++j)
            if (out[j] != a[j] + b[j]) {
              ++failures;
              break;
            }
        } catch (const vgpu::Error&) {
          ++failures;
        }
      }
    });
  }
  for (int i = 0; i < kLosses; ++i) {
    vgpu::testing::force_device_lost(device,
                                     i % 2 ? vgpu::testing::LossPoint::now : vgpu::testing::LossPoint::next_wait);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (auto& th : threads) th.join();
  CHECK(failures == 0);
  INFO(device.counters().to_string());
  CHECK(device.counters().recoveries <= static_cast<std::uint64_t>(kLosses));
}
