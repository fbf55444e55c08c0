// SPDX-License-Identifier: Apache-2.0
// tests/runtime/device_fault_test.cpp — each backend's device-loss detection, run on the backend named
// by VGPU_TEST_BACKENDS (cpu, vulkan, opengl or cuda; ctest runs it once per backend as
// device_fault.<backend>): a simulated loss (DeviceImpl::inject_loss, which
// vgpu::testing::force_device_lost(LossPoint::next_wait) arms) reaches the caller of the wait
// that found it as device_lost, worded as the backend's API reports a real one, and marks the
// device lost; a freshly opened backend device of the same id then computes right, whether
// the lost one is dropped before or after it. Real faults where they are safe: on CUDA a kernel
// writing through an illegal address (a sticky error; the context is reset for the next device),
// on Vulkan and OpenGL a kernel running past a 200 ms limit (the old device is left to finish
// it while the fresh one works).
//
// The tests reach the backend device through a backend that wraps the real one (TapBackend)
// and remembers each device it opens: what the hook does is the backend's, not core's.
// Without a device of the backend, main() prints the reason and exits 77 (ctest's skip).
// Wall-clock bounds are generous "did not hang" checks only.
#include "support/catch.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "registry.hpp"
#include "support/backend_under_test.hpp"
#include "support/cache_fixtures.hpp"
#include "support/catch_session.hpp"
#include "support/expect_error.hpp"
#include "support/scale_add_kernel.hpp"
#include "support/spin_kernel.hpp"
#include "support/timing.hpp"
#include "vgpu/backend/backend_settings.hpp"
#include "vgpu/backend/compute_backend.hpp"
#include "vgpu/backend/op_tuning.hpp"
#include "vgpu/backend/device_impl.hpp"
#include "vgpu/vgpu.hpp"

namespace vgpu_test {
namespace {

using namespace std::chrono_literals;

/// The backend under test: VGPU_TEST_BACKENDS (one backend name; cpu when unset).
vgpu::BackendKind backend_under_test() { return single_backend_under_test("cpu"); }

std::string device_id() { return std::string(vgpu::to_string(backend_under_test())) + ":0"; }

/// The compiled-in backend of kind, remembering every device it opens (the tests arm the
/// simulated loss on them). Thread-safety: open() and opened() lock.
class TapBackend final : public vgpu::ComputeBackend {
 public:
  explicit TapBackend(vgpu::BackendKind kind) {
    for (auto& b : vgpu::detail::make_compiled_backends(vgpu::BackendSettings::process()))
      if (b->kind() == kind) inner_ = std::move(b);
    if (!inner_) FAIL("no compiled-in backend " << vgpu::to_string(kind));
  }
  vgpu::BackendKind kind() const noexcept override { return inner_->kind(); }
  std::shared_ptr<const vgpu::OpTuner> op_tuner() const override { return inner_->op_tuner(); }
  vgpu::BackendStatus status() override { return inner_->status(); }
  std::vector<vgpu::DeviceInfo> enumerate() override { return inner_->enumerate(); }
  std::unique_ptr<vgpu::DeviceImpl> open(std::uint32_t index) override {
    auto d = inner_->open(index);
    std::lock_guard lock(mutex_);
    opened_.push_back(d.get());
    return d;
  }
  /// Returns the backend devices opened so far, oldest first (valid while their Device lives).
  std::vector<vgpu::DeviceImpl*> opened() {
    std::lock_guard lock(mutex_);
    return opened_;
  }

 private:
  std::unique_ptr<vgpu::ComputeBackend> inner_;
  std::mutex mutex_;
  std::vector<vgpu::DeviceImpl*> opened_;
};

/// A runtime over the tapped backend under test, and the tap.
struct Tapped {
  std::shared_ptr<TapBackend> tap = std::make_shared<TapBackend>(backend_under_test());
  vgpu::Runtime runtime{[this] {
    vgpu::RuntimeOptions o;
    o.backends.push_back(tap);
    return o;
  }()};
};

/// What the backend's own detection path says of the simulated loss.
std::string loss_wording() {
  const vgpu::BackendKind kind = backend_under_test();
  if (kind == vgpu::BackendKind::vulkan) return "VK_ERROR_DEVICE_LOST";
  if (kind == vgpu::BackendKind::cuda) return "CUDA_ERROR_ILLEGAL_ADDRESS";
  if (kind == vgpu::BackendKind::opengl) return "context";
  return "workgroup";
}

/// The scale-add kernel on one device, with its buffers.
struct ScaleAdd {
  vgpu::Device device;
  vgpu::Kernel kernel;
  vgpu::Buffer a, b, out;
  vgpu::BindingSet set;
  std::uint32_t n;

  ScaleAdd(vgpu::Device d, std::uint32_t n_) : device(std::move(d)), n(n_) {
    const vgpu::BackendKind kind = device.info().backend;
    kernel = device.compile(scale_add_source(kind, scale_add_text(kind)), scale_add_options());
    a = device.create_buffer(std::uint64_t{n} * 4);
    b = device.create_buffer(std::uint64_t{n} * 4);
    out = device.create_buffer(std::uint64_t{n} * 4);
    set = device.bind(kernel, {{0, a}, {1, b}, {2, out}});
  }
  /// Uploads random inputs (seed), a poisoned output, and dispatches; returns the expected output.
  std::vector<float> start(std::uint32_t seed, float scale) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
    std::vector<float> va(n), vb(n), expected(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      va[i] = dist(rng);
      vb[i] = dist(rng);
      expected[i] = static_cast<float>(double(va[i]) * scale + vb[i]);
    }
    const std::vector<float> poison(n, -12345.0f);
    device.write(a, va.data(), va.size() * 4);
    device.write(b, vb.data(), vb.size() * 4);
    device.write(out, poison.data(), poison.size() * 4);
    device.dispatch(kernel, set, vgpu::ParamsBlock::of(ScaleAddParams{n, scale, 0, 0}), spread((n + 63) / 64));
    return expected;
  }
  /// Reads the output back (waiting for the dispatch).
  std::vector<float> result() {
    std::vector<float> r(n);
    device.read(out, r.data(), r.size() * 4);
    return r;
  }
  /// Runs once and checks every element (fma or not: a few ulps).
  void check(std::uint32_t seed) {
    const std::vector<float> expected = start(seed, 1.5f);
    const std::vector<float> got = result();
    std::size_t wrong = 0;
    for (std::uint32_t i = 0; i < n; ++i)
      if (!(std::abs(got[i] - expected[i]) <= 1e-5f * (1.0f + std::abs(expected[i])))) ++wrong;
    INFO(wrong << " of " << n << " elements wrong on " << device.info().id());
    CHECK(wrong == 0);
  }
};

}  // namespace

TEST_CASE("device fault: a simulated loss at a read reports device_lost through the backend's own path",
          "[device_loss]") {
  Tapped t;
  vgpu::Device device = t.runtime.open(device_id());
  ScaleAdd lost(device, 1000);
  lost.check(1);  // right before the loss
  REQUIRE(t.tap->opened().size() == 1);
  t.tap->opened().front()->inject_loss();
  // The wait reports it (on the CPU, whose submit is its wait, the dispatch does).
  REQUIRE_VGPU_ERROR(device_lost, loss_wording(), lost.start(2, 2.0f); lost.result());
  CHECK(device.lost());
  CHECK(t.tap->opened().front()->lost());
  // A fresh backend device of the same id, opened while the lost one still exists (core's
  // order when it recovers), computes right; then the lost one goes.
  ScaleAdd fresh(t.runtime.open(device_id()), 1017);
  fresh.check(3);
  CHECK(t.tap->opened().size() == 2);
  const auto t0 = Clock::now();
  lost = ScaleAdd(fresh.device, 17);
  device = vgpu::Device();
  CHECK(seconds_since(t0) < 10.0);
  fresh.check(4);
  lost.check(5);
}

TEST_CASE("device fault: a simulated loss at synchronize, the lost device dropped before a fresh one opens",
          "[device_loss]") {
  Tapped t;
  {
    vgpu::Device device = t.runtime.open(device_id());
    ScaleAdd lost(device, 255);
    lost.check(6);
    t.tap->opened().front()->inject_loss();
    REQUIRE_VGPU_ERROR(device_lost, loss_wording(), lost.start(7, -0.5f); device.synchronize());
    CHECK(device.lost());
  }  // every handle of the lost device goes first
  ScaleAdd fresh(t.runtime.open(device_id()), 4097);
  fresh.check(8);
  fresh.check(9);
  CHECK(t.tap->opened().size() == 2);
}

TEST_CASE("device fault: an armed loss waits for the next wait for submitted work", "[device_loss]") {
  Tapped t;
  vgpu::Device device = t.runtime.open(device_id());
  ScaleAdd s(device, 64);
  t.tap->opened().front()->inject_loss();
  // Creating a buffer and compiling wait for no submitted work: the loss is still armed. (A
  // write may wait — a discrete GPU's staging waits for the copies before it — so it is not
  // among them: the H200's Vulkan and CUDA writes do.)
  vgpu::Buffer extra = device.create_buffer(256);
  const vgpu::Kernel again = device.compile(
      scale_add_source(device.info().backend, scale_add_text(device.info().backend)), scale_add_options());
  CHECK(!device.lost());
  REQUIRE_VGPU_ERROR(device_lost, loss_wording(), s.start(10, 3.0f); s.result());
  CHECK(device.lost());
  ScaleAdd fresh(t.runtime.open(device_id()), 100);
  fresh.check(11);
}

TEST_CASE(
    "device fault: CUDA, a kernel writing through an illegal address loses the device; it recovers where the driver "
    "allows",
    "[device_loss][real_fault]") {
  if (backend_under_test() != vgpu::BackendKind::cuda) {
    WARN("a real fault is provoked only on CUDA (an illegal address); this run is on "
         << vgpu::to_string(backend_under_test()));
    return;
  }
  Tapped t;
  vgpu::Device device = t.runtime.open(device_id());
  ScaleAdd before(device, 333);
  before.check(12);
  vgpu::KernelSource poke;
  poke.name = "test.cuda_illegal_address";
  set_cuda(poke,
           "extern \"C\" __global__ void poke(unsigned* data) {\n"
           "  if (threadIdx.x == 0) *(volatile unsigned*)0x10 = data[0];\n"
           "}\n",
           "poke");
  poke.bindings = {{0, vgpu::Access::read, "data",
                    [](const vgpu::ParamsBlock&, const vgpu::Groups&) -> std::uint64_t { return 4; }}};
  vgpu::Kernel k = device.compile(poke);
  vgpu::Buffer data = device.create_buffer(4);
  const std::uint32_t word = 7;
  device.write(data, &word, 4);
  vgpu::BindingSet set = device.bind(k, {{0, data}});
  device.dispatch(k, set, vgpu::ParamsBlock{}, {1, 1, 1});
  REQUIRE_VGPU_ERROR(device_lost, "CUDA_ERROR_ILLEGAL_ADDRESS", device.synchronize());
  CHECK(device.lost());
  // In place: the same Device, whose next call resets the poisoned context (a fresh backend
  // device opened while the poisoned one still exists) and rebuilds what lives on it.
  CHECK(t.runtime.open(device_id()) == device);
  const vgpu::CounterSnapshot c0 = device.counters();
  // What the driver allows decides the rest. The 580 driver (CUDA 13) on the H200 keeps every
  // context of the process on the GPU poisoned after a real fault (reset, release and a new
  // context all fail): then the recovery must say so precisely, and the other backends must still
  // work in this process. A driver that grants a fresh context must give right results.
  bool recovered = true;
  try {
    before.check(13);  // writes every one of its buffers again, then dispatches
  } catch (const vgpu::Error& e) {
    recovered = false;
    INFO(e.what());
    CHECK(e.category() == vgpu::ErrorCategory::device_lost);
    CHECK_THAT(e.what(),
               Catch::Matchers::ContainsSubstring("refuses this process a working context") &&
                   Catch::Matchers::ContainsSubstring("Fix: restart the process to use CUDA on this GPU again"));
  }
  if (!recovered) {
    WARN(
        "the CUDA driver allows no recovery in this process after a real kernel fault (as on driver 580 / CUDA "
        "13); checked the error and that the CPU backend still computes in this process");
    CHECK(device.lost());
    REQUIRE_VGPU_ERROR(device_lost, "restart the process", before.check(14));  // every later call says the same
    vgpu::Runtime cpu_runtime(vgpu::test::only(vgpu::BackendKind::cpu));
    ScaleAdd on_cpu(cpu_runtime.open("cpu:0"), 1001);
    on_cpu.check(15);
    return;
  }
  CHECK(!device.lost());
  CHECK((device.counters() - c0).recoveries == 1);
  CHECK(t.tap->opened().size() == 2);
  // The user's buffer lived on the lost context: no stale data, a device_lost with the Fix.
  std::uint32_t back = 0;
  REQUIRE_VGPU_ERROR(device_lost, "write the data again", device.read(data, &back, 4));
  device.write(data, &word, 4);
  device.read(data, &back, 4);
  CHECK(back == word);
  ScaleAdd fresh(device, 4097);
  fresh.check(14);
  k = vgpu::Kernel();
  set = vgpu::BindingSet();
  data = vgpu::Buffer();
  fresh.check(15);
  before.check(16);
}

TEST_CASE(
    "device fault: Vulkan and OpenGL, a kernel past a 200 ms limit loses the device; it recovers beside the runaway",
    "[device_loss][real_fault]") {
  const vgpu::BackendKind kind = backend_under_test();
  if (kind != vgpu::BackendKind::vulkan && kind != vgpu::BackendKind::opengl) {
    WARN("a runaway kernel is provoked only on Vulkan and OpenGL; this run is on " << vgpu::to_string(kind));
    return;
  }
  Tapped t;
  // About 1.5 s of work: long enough to outlast the limit many times over, short enough that
  // llvmpipe/lavapipe threads do not burn CI time for long after the test let go.
  const Work run = work_for(t.runtime.open(device_id()), 1.5);
  vgpu::Device device = t.runtime.open(device_id());
  Spin spin(device, run.groups);  // compiled under the default limit: a busy machine compiles slowly
  device.set_timeout(200ms);
  spin.start(run);
  const auto t0 = Clock::now();
  REQUIRE_VGPU_ERROR(timeout, "time limit of 200 ms", spin.result(run));
  CHECK(seconds_since(t0) < 5.0);
  CHECK(device.lost());
  // The old backend device still runs its kernel (it is left to finish it); the same Device
  // recovers beside it. The limit stays the Device's: lift it, since the runaway still shares
  // a software rasteriser's threads with the new one.
  CHECK(t.runtime.open(device_id()) == device);
  device.set_timeout(60s);
  ScaleAdd after(device, 1000);
  after.check(16);
  CHECK(!device.lost());
  CHECK(device.counters().recoveries == 1);
  CHECK(t.tap->opened().size() == 2);
  spin = Spin(device, 2);
  after.check(17);
  spin.check({100, 2});
}

}  // namespace vgpu_test

int main(int argc, char* argv[]) {
  // OpenGL: whether the context learns of GPU resets.
  auto describe = [](const vgpu::DeviceInfo& info) -> std::string {
    if (info.backend != vgpu::BackendKind::opengl) return "";
    for (const std::string& f : info.features)
      if (f == "reset_notification") return ", a context with reset notification";
    return ", a plain context (no reset notification)";
  };
  return vgpu_test::run_single_backend(argc, argv, "device fault tests", "device_fault", vgpu_test::backend_under_test,
                                       describe);
}
