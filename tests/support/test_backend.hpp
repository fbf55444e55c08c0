// SPDX-License-Identifier: Apache-2.0
// tests/support/test_backend.hpp — a backend built only for tests: each of its devices is the
// CPU device underneath (so results are right) with knobs the test turns while it runs: latency
// added per dispatch (with optional noise and spikes, seeded differently in every process, so
// that fresh processes see different noise) and per KiB a round trip moves, wrong results, failures at compile,
// dispatch, allocation or (re)opening, losses of the next few dispatches (and the test hook's
// simulated loss), a timeout that loses the device, and a fingerprint salt. Injected through
// RuntimeOptions::backends, it lets the selection tests decide which device is fastest and which
// one breaks.
// Costs are simulated, never slept: latency and link costs advance the SimulatedClock that the
// devices give vgpu's measurements (DeviceImpl::timing_clock()), so calibration measures exactly
// the injected costs (the CPU work underneath counts nothing) and no test that judges devices
// by their times depends on the machine's load (issue 29).
// Thread-safety: knobs are atomics (the salt is read once, when the runtime enumerates); the
// devices forward to the CPU device, which is safe from any thread; the clock is per thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "vgpu/backend/compute_backend.hpp"
#include "vgpu/backend/op_tuning.hpp"
#include "vgpu/backend/deadline.hpp"
#include "vgpu/backend/device_impl.hpp"
#include "vgpu/backend/fingerprint.hpp"
#include "vgpu/backend/registry.hpp"
#include "vgpu/backend/timing_clock.hpp"
#include "vgpu/error.hpp"
#include "vgpu/runtime.hpp"
#include "support/forwarding_device.hpp"

namespace vgpu_test {

/// The test backend's kind: a value outside vgpu's own four, named "test" (as a third-party
/// backend would be).
inline const vgpu::BackendKind kTestBackend = vgpu::BackendKind::named("test");

/// What one test device does; shared between the test and the device.
struct TestDeviceKnobs {
  std::atomic<std::uint64_t> latency_us{0};  ///< added to every dispatch (simulated: SimulatedClock)
  std::atomic<std::uint64_t> ns_per_kib{0};  ///< added per KiB a round trip moves, a slow host link (simulated)
  std::atomic<bool> fail_compile{false};     ///< compile() throws compile_error
  std::atomic<bool> fail_dispatch{false};    ///< submit/round_trip throw device_lost
  std::atomic<bool> timeout_lost{false};  ///< submit/round_trip time out, losing the device (a GPU wait that gave up)
  std::atomic<bool> fail_alloc{false};    ///< create_buffer throws out_of_memory
  std::atomic<int> lose_next{0};          ///< the next lose_next submits/round trips throw device_lost
  std::atomic<bool> fail_open{false};     ///< opening the device (again) throws unavailable
  /// Its dispatches do nothing and every word a round trip reads back is 1.0f: fast and wrong,
  /// as a device whose shader loops stop early (Mesa's software devices, issue 29) is.
  std::atomic<bool> wrong_results{false};
  std::atomic<std::uint64_t> opens{0};             ///< times the device was opened
  std::atomic<std::uint64_t> dispatches{0};        ///< dispatches run so far
  std::atomic<int> noise_pct{0};                   ///< each dispatch's latency times a random factor in [1-p%, 1+p%]
  std::atomic<int> spike_every{0};                 ///< every k-th dispatch (from a random phase) takes 4x its latency
  std::atomic<std::uint64_t> noise_seed{0};        ///< seeds the noise and spike phase (0: the OS's entropy)
  std::atomic<std::uint64_t> compile_delay_ms{0};  ///< every compile() really takes this much longer (a slow driver)
  std::atomic<bool> hold_compile{false};           ///< compile() waits while this is set (the test releases it)
  std::atomic<std::uint64_t> compiles_started{0}, compiles_done{0};  ///< compile() calls begun / returned
  std::string salt;                                                  ///< part of the fingerprint (change = new device)
  vgpu::DeviceType type = vgpu::DeviceType::other;
  std::vector<std::string> features;  ///< added to DeviceInfo::features (features it claims: the truth tests' subject)
};

/// Makes knobs for a device with the given latency and salt.
inline std::shared_ptr<TestDeviceKnobs> test_device(std::uint64_t latency_us, std::string salt) {
  auto k = std::make_shared<TestDeviceKnobs>();
  k->latency_us = latency_us;
  k->salt = std::move(salt);
  return k;
}

/// Makes knobs for one device per latency, all with salt.
inline std::vector<std::shared_ptr<TestDeviceKnobs>> test_devices(const std::vector<std::uint64_t>& latencies_us,
                                                                  const std::string& salt) {
  std::vector<std::shared_ptr<TestDeviceKnobs>> k;
  for (auto l : latencies_us) k.push_back(test_device(l, salt));
  return k;
}

/// The clock of the test devices (their DeviceImpl::timing_clock()): simulated time that a
/// dispatch or round trip on a test device advances by its injected cost instead of sleeping
/// it, so that what calibration, the variant choice or a queue set measures around the call is
/// exactly that cost, however loaded the machine is. Per thread: a call's cost is its caller's
/// wait (as a sleep was), so calls on other threads at the same time never show in a measurement.
/// Thread-safety: safe from any thread (each reads and advances its own time).
class SimulatedClock final : public vgpu::TimingClock {
 public:
  time_point now() const noexcept override {
    return time_point(std::chrono::duration_cast<time_point::duration>(std::chrono::nanoseconds(elapsed_ns_)));
  }
  /// Adds ns of simulated time on the calling thread's clock.
  static void advance(std::uint64_t ns) noexcept { elapsed_ns_ += static_cast<std::int64_t>(ns); }
  /// Returns the one clock (never destroyed: a runtime may outlive static destruction).
  static const SimulatedClock& instance() {
    static const auto* clock = new SimulatedClock;
    return *clock;
  }

 private:
  inline static thread_local std::int64_t elapsed_ns_ = 0;
};

namespace detail {

// A recorded batch of the CPU device plus how many dispatches it holds.
class TestBatch final : public vgpu::RecordedBatchImpl {
 public:
  std::unique_ptr<vgpu::RecordedBatchImpl> inner;
  std::uint64_t dispatches = 0;
};

class TestDevice final : public ForwardingDevice {
 public:
  TestDevice(std::unique_ptr<vgpu::DeviceImpl> inner, vgpu::DeviceInfo info, std::shared_ptr<TestDeviceKnobs> knobs)
      : ForwardingDevice(std::move(inner), std::move(info)), knobs_(std::move(knobs)) {}

  const vgpu::TimingClock& timing_clock() const noexcept override { return SimulatedClock::instance(); }
  std::unique_ptr<vgpu::BufferImpl> create_buffer(std::uint64_t bytes) override {
    if (knobs_->fail_alloc)
      vgpu::fail(vgpu::ErrorCategory::out_of_memory, info_.id() + " is out of memory (injected).", "free memory.");
    return inner_->create_buffer(bytes);
  }
  std::unique_ptr<vgpu::KernelImpl> compile(const vgpu::KernelSource& source, const vgpu::DialectSource& code,
                                            const vgpu::CompileOptions& o) override {
    if (knobs_->fail_compile)
      vgpu::fail(vgpu::ErrorCategory::compile_error, info_.id() + " cannot compile '" + source.name + "' (injected).",
                 "run it elsewhere.");
    ++knobs_->compiles_started;
    while (knobs_->hold_compile) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (const auto ms = knobs_->compile_delay_ms.load()) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    auto kernel = inner_->compile(source, code, o);
    ++knobs_->compiles_done;
    return kernel;
  }
  std::unique_ptr<vgpu::RecordedBatchImpl> record(std::span<const vgpu::DispatchCommand> commands) override {
    auto b = std::make_unique<TestBatch>();
    b->inner = inner_->record(commands);
    b->dispatches = commands.size();
    return b;
  }
  void submit(vgpu::RecordedBatchImpl& batch, const vgpu::Deadline& dl) override {
    auto& b = static_cast<TestBatch&>(batch);
    before_dispatch(b.dispatches);
    if (!knobs_->wrong_results) inner_->submit(*b.inner, dl);
  }
  void round_trip(std::span<const vgpu::HostWriteOp> writes, vgpu::RecordedBatchImpl* batch,
                  std::span<const vgpu::HostReadOp> reads, const vgpu::Deadline& dl) override {
    auto* b = static_cast<TestBatch*>(batch);
    if (b) before_dispatch(b->dispatches);
    std::uint64_t bytes = 0;
    for (const auto& w : writes) bytes += w.bytes;
    for (const auto& r : reads) bytes += r.bytes;
    SimulatedClock::advance(knobs_->ns_per_kib * bytes / 1024);
    const bool wrong = knobs_->wrong_results;
    inner_->round_trip(writes, b && !wrong ? b->inner.get() : nullptr, reads, dl);
    if (wrong)
      for (const auto& r : reads) std::fill_n(static_cast<float*>(r.out), r.bytes / sizeof(float), 1.0f);
  }

 private:
  void before_dispatch(std::uint64_t n) {
    int left = knobs_->lose_next.load();
    while (left > 0 && !knobs_->lose_next.compare_exchange_weak(left, left - 1)) {
    }
    if (take_injected_loss() || left > 0) {
      mark_lost("lost (injected)");
      vgpu::fail(vgpu::ErrorCategory::device_lost, info_.id() + " was lost (injected once).", "recreate the device.");
    }
    if (knobs_->fail_dispatch)
      vgpu::fail(vgpu::ErrorCategory::device_lost, info_.id() + " was lost (injected).", "recreate the device.");
    if (knobs_->timeout_lost) {
      mark_lost("an injected timeout left work running");
      vgpu::fail_timeout(info_, vgpu::Deadline::after(timeout()), "dispatching (injected)", true);
    }
    const std::uint64_t before = knobs_->dispatches.fetch_add(n);
    SimulatedClock::advance(noisy_latency_ns(before, n));
  }

  // The latency of n dispatches after the first `before`, with the knobs' noise and spikes, in ns.
  std::uint64_t noisy_latency_ns(std::uint64_t before, std::uint64_t n) {
    const double base = double(knobs_->latency_us.load()) * 1000;
    const int noise = knobs_->noise_pct, every = knobs_->spike_every;
    if (base == 0 || (noise == 0 && every <= 0)) return knobs_->latency_us * 1000 * n;
    std::lock_guard lock(rng_mutex_);
    std::uniform_real_distribution<double> factor(1 - noise / 100.0, 1 + noise / 100.0);
    double total = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      const bool spike = every > 0 && (before + i + spike_phase_) % std::uint64_t(every) == 0;
      total += base * (noise ? factor(rng_) : 1.0) * (spike ? 4.0 : 1.0);
    }
    return static_cast<std::uint64_t>(total);
  }

  std::shared_ptr<TestDeviceKnobs> knobs_;
  std::mutex rng_mutex_;  // a leaf: guards rng_ only
  // Seeded from the knobs' noise_seed and latency where a test gives one (runs it can repeat,
  // each process and device drawing other noise), else from the OS and this device's address.
  std::mt19937_64 rng_{knobs_->noise_seed != 0 ? knobs_->noise_seed * 0x9E3779B97F4A7C15ull + knobs_->latency_us
                                               : std::random_device{}() ^ reinterpret_cast<std::uintptr_t>(this)};
  std::uint64_t spike_phase_ = rng_() % 1024;
};

}  // namespace detail

/// The test backend: device i is test:i with knobs[i].
class TestBackend final : public vgpu::ComputeBackend {
 public:
  explicit TestBackend(std::vector<std::shared_ptr<TestDeviceKnobs>> knobs)
      : knobs_(std::move(knobs)), cpu_(vgpu::make_cpu_backend()) {}

  vgpu::BackendKind kind() const noexcept override { return kTestBackend; }
  std::shared_ptr<const vgpu::OpTuner> op_tuner() const override { return cpu_->op_tuner(); }
  std::string name() const override { return "test"; }
  vgpu::BackendStatus status() override { return {kTestBackend, true, true, {}}; }
  std::vector<vgpu::DeviceInfo> enumerate() override {
    std::vector<vgpu::DeviceInfo> out;
    for (std::uint32_t i = 0; i < knobs_.size(); ++i) out.push_back(info(i));
    return out;
  }
  std::unique_ptr<vgpu::DeviceImpl> open(std::uint32_t index) override {
    if (knobs_.at(index)->fail_open)
      vgpu::fail(vgpu::ErrorCategory::unavailable, "test:" + std::to_string(index) + " cannot be opened (injected).",
                 "clear the fail_open knob.");
    ++knobs_.at(index)->opens;
    return std::make_unique<detail::TestDevice>(cpu_->open(0), info(index), knobs_.at(index));
  }

 private:
  vgpu::DeviceInfo info(std::uint32_t i) const {
    vgpu::DeviceInfo d = cpu_->enumerate().at(0);
    d.backend = kTestBackend;
    d.index = i;
    d.name = "test device " + std::to_string(i);
    d.type = knobs_[i]->type;
    d.features.insert(d.features.end(), knobs_[i]->features.begin(), knobs_[i]->features.end());
    d.fingerprint = vgpu::make_fingerprint({{"test_device", std::to_string(i)}, {"salt", knobs_[i]->salt}});
    return d;
  }

  std::vector<std::shared_ptr<TestDeviceKnobs>> knobs_;
  std::unique_ptr<vgpu::ComputeBackend> cpu_;
};

/// RuntimeOptions with only the test backend over knobs (and an optional forced device), with
/// background calibration off.
inline vgpu::RuntimeOptions test_runtime_options(std::vector<std::shared_ptr<TestDeviceKnobs>> knobs,
                                                 std::string forced = {}) {
  vgpu::RuntimeOptions o;
  o.forced_device = std::move(forced);
  o.backends.push_back(std::make_shared<TestBackend>(std::move(knobs)));
  // The tests over this backend check what a call's own calibration does; serving from an
  // interim device while it runs in the background is tested on its own (background_test.cpp),
  // which turns it on.
  o.background = false;
  return o;
}

}  // namespace vgpu_test
