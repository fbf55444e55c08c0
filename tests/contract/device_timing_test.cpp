// SPDX-License-Identifier: Apache-2.0
// tests/contract/device_timing_test.cpp — dispatch times read from the device's own timer
// (Device::set_device_timing): one per timed dispatch, under its kernel's name, in order and
// never overlapping, within the host time around the work, counted; nothing while timing is off.
#include <chrono>
#include <cstdint>
#include <vector>

#include "contract/contract.hpp"
#include "support/scale_add_kernel.hpp"

namespace vgpu_test::contract {
namespace {

/// Turns timing off again when a case ends: the device is shared by every case of its backend.
struct TimingOff {
  vgpu::Device& device;
  ~TimingOff() {
    try {
      device.set_device_timing(false);
    } catch (...) {  // a test failure already reported; nothing to add from a destructor
    }
  }
};

/// Three dependent scale_add dispatches over n floats: y = 2x + x, z = -0.5y + x, y2 = 4z + y (= x).
struct Chain {
  vgpu::Kernel kernel;
  vgpu::Buffer x, y, z, y2;
  vgpu::Batch batch;
  Chain(vgpu::Device& device, const Backend& backend, std::uint32_t n)
      : kernel(device.compile(scale_add_source(backend.kind, scale_add_text(backend.kind)), scale_add_options())),
        x(device.create_buffer(n * 4)),
        y(device.create_buffer(n * 4)),
        z(device.create_buffer(n * 4)),
        y2(device.create_buffer(n * 4)),
        batch(device.create_batch()) {
    const auto groups = spread((n + 63) / 64);
    batch.dispatch(kernel, device.bind(kernel, {{0, x}, {1, x}, {2, y}}),
                   vgpu::ParamsBlock::of(ScaleAddParams{n, 2.0f, 0, 0}), groups);
    batch.dispatch(kernel, device.bind(kernel, {{0, y}, {1, x}, {2, z}}),
                   vgpu::ParamsBlock::of(ScaleAddParams{n, -0.5f, 0, 0}), groups);
    batch.dispatch(kernel, device.bind(kernel, {{0, z}, {1, y}, {2, y2}}),
                   vgpu::ParamsBlock::of(ScaleAddParams{n, 4.0f, 0, 0}), groups);
  }
};

std::uint64_t host_ns(std::chrono::steady_clock::duration d) {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

}  // namespace

CONTRACT_CASE("device timing: timed dispatches are ordered, within the host time around them, and counted", "[timing]",
              every_backend) {
  vgpu::Device device = open_device(backend);
  if (!device.can_time_dispatches()) {
    // What a user who asks anyway gets: a refusal that says what to do instead.
    try {
      device.set_device_timing(true);
      FAIL("set_device_timing(true) was accepted by a device that cannot time dispatches");
    } catch (const vgpu::Error& e) {
      CHECK(e.category() == vgpu::ErrorCategory::not_supported);
      CHECK(std::string(e.what()).find("Fix:") != std::string::npos);
    }
    skip(device.info().id() + " cannot time dispatches on the device (its backend reads no device timer)");
    return;
  }
  TimingOff restore{device};
  constexpr std::uint32_t n = 1 << 20;  // long enough for every timer to see each dispatch run
  std::vector<float> xs(n), out(n);
  for (std::uint32_t i = 0; i < n; ++i) xs[i] = static_cast<float>(i % 97) - 48.0f;  // exact in every step

  // Off: the dispatches run untimed.
  device.set_device_timing(false);
  CHECK_FALSE(device.device_timing());
  Chain untimed(device, backend, n);
  {
    device.write(untimed.x, xs.data(), n * 4);
    const std::size_t kept = device.dispatch_times().size();
    const vgpu::CounterSnapshot before = device.counters();
    device.submit(untimed.batch);
    device.synchronize();
    const vgpu::CounterSnapshot d = device.counters() - before;
    CHECK(d.timed_dispatches == 0);
    CHECK(d.device_ns == 0);
    CHECK(device.dispatch_times().size() == kept);
  }

  // On: each submit of a batch recorded with timing on reports its three dispatches.
  device.set_device_timing(true);
  CHECK(device.device_timing());
  {
    // A batch recorded while timing was off is timed from the switch on too (Vulkan records it again).
    const vgpu::CounterSnapshot before = device.counters();
    device.submit(untimed.batch);
    device.synchronize();
    CHECK((device.counters() - before).timed_dispatches == 3);
  }
  Chain timed(device, backend, n);
  std::uint64_t previous_end = 0;
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round << " on " << device.info().id());
    device.write(timed.x, xs.data(), n * 4);
    const std::size_t kept = device.dispatch_times().size();
    const vgpu::CounterSnapshot before = device.counters();
    const auto t0 = std::chrono::steady_clock::now();
    device.submit(timed.batch);
    device.synchronize();
    const std::uint64_t host = host_ns(std::chrono::steady_clock::now() - t0);
    const vgpu::CounterSnapshot d = device.counters() - before;
    const std::vector<vgpu::DispatchTime> all = device.dispatch_times();
    // kept may be at the log's bound already: then as many old times went as new ones came.
    REQUIRE(all.size() >= 3);
    REQUIRE((all.size() == kept + 3 || all.size() == vgpu::kDispatchTimesKept));
    const std::vector<vgpu::DispatchTime> t(all.end() - 3, all.end());
    CHECK(d.timed_dispatches == 3);
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < 3; ++i) {
      INFO("dispatch " << i << ": " << t[i].begin_ns << " .. " << t[i].end_ns);
      CHECK(t[i].kernel == timed.kernel.name());
      CHECK(t[i].begin_ns <= t[i].end_ns);
      if (i > 0) CHECK(t[i - 1].end_ns <= t[i].begin_ns);  // each waits for the one before
      sum += t[i].duration_ns();
    }
    CHECK(d.device_ns == sum);
    CHECK(sum > 0);
    // The device's clock only moves forward, across submissions too.
    CHECK(previous_end <= t[0].begin_ns);
    previous_end = t[2].end_ns;
    // The work ran between the submit and the end of the wait: its span on the device's clock
    // is at most the host time around it (1 us of slack per dispatch for the timers' resolution:
    // CUDA's event differences are ~0.5 us).
    INFO("device span " << t[2].end_ns - t[0].begin_ns << " ns, host " << host << " ns");
    CHECK(t[2].end_ns - t[0].begin_ns <= host + 3000);
    device.read(timed.y2, out.data(), n * 4);
    std::size_t bad = 0;
    for (std::uint32_t i = 0; i < n; ++i) bad += out[i] != xs[i];
    CHECK(bad == 0);
  }

  // Off again: a batch recorded now reports nothing.
  device.set_device_timing(false);
  Chain after(device, backend, n);
  device.write(after.x, xs.data(), n * 4);
  const vgpu::CounterSnapshot before = device.counters();
  device.submit(after.batch);
  device.synchronize();
  CHECK((device.counters() - before).timed_dispatches == 0);
}

}  // namespace vgpu_test::contract
