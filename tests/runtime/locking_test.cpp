// SPDX-License-Identifier: Apache-2.0
// tests/runtime/locking_test.cpp — the one locking policy (docs/architecture.md, "Locking policy"):
// DeviceCore serialises calls per device, so many threads sharing one device of every backend
// get their own right results; dropping a handle never waits for the device — its backend
// object is freed once the work that uses it has finished (deferred destruction), on a GPU
// while the dispatch still runs, on the CPU while another thread's dispatch holds the device;
// a CPU kernel calling its own device is refused instead of deadlocking; and selection runs
// calibrations (user factories, builds, timing) without holding a lock, so a factory may select
// another op and two threads selecting different ops both go on.
//
// Wall-clock checks are "did not hang" bounds only (support/finishes.hpp).
#include "support/catch.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/kernel_sources.hpp"
#include "support/expect_error.hpp"
#include "support/finishes.hpp"
#include "support/spin_kernel.hpp"
#include "support/test_backend.hpp"
#include "vgpu/vgpu.hpp"

namespace vgpu_test {
namespace {

using namespace std::chrono_literals;

/// The devices of every backend this build found here (the CPU at least).
std::vector<vgpu::DeviceInfo> every_device() { return vgpu::Runtime::global().devices(); }

/// One plan run through the raw Device API: its tensors as buffers, its first step bound and
/// dispatched (the built-in ops carry a source for every backend).
struct RawRun {
  vgpu::Kernel kernel;
  std::vector<vgpu::Buffer> buffers;  // one per plan tensor
  vgpu::BindingSet set;

  RawRun(vgpu::Device& device, const vgpu::KernelPlan& plan) {
    kernel = device.compile(plan.source, plan.options);
    for (const vgpu::TensorSpec& t : plan.tensors)
      buffers.push_back(device.create_buffer(vgpu::element_count(t.shape) * vgpu::dtype_size(t.dtype)));
    std::vector<vgpu::Binding> bindings;
    for (const auto& [slot, tensor] : plan.steps.at(0).slot_tensor) bindings.push_back({slot, buffers[tensor]});
    set = device.bind(kernel, bindings);
  }
};

/// Adds a = t and b = i elementwise on device through the raw API (fresh buffers each time, so
/// handles come and go while other threads work) and counts the elements that are not t + i.
int add_once(vgpu::Device& device, const vgpu::KernelPlan& plan, float t, float i, bool batched) {
  const std::uint64_t n = plan.tensors[0].shape[0];
  RawRun run(device, plan);
  const std::vector<float> a(n, t), b(n, i);
  std::vector<float> out(n, -1.0f);
  device.write(run.buffers[0], a.data(), n * 4);
  device.write(run.buffers[1], b.data(), n * 4);
  const vgpu::PlanStep& step = plan.steps[0];
  if (batched) {
    vgpu::Batch batch = device.create_batch();
    batch.dispatch(run.kernel, run.set, step.params, step.groups);
    device.submit(batch);
    device.synchronize();
  } else {
    device.dispatch(run.kernel, run.set, step.params, step.groups);
  }
  device.read(run.buffers[2], out.data(), n * 4);
  int wrong = 0;
  for (float v : out) wrong += v != t + i;
  return wrong;
}

/// Makes a CPU kernel with one workgroup that runs body (a KernelSource holding the callable).
vgpu::KernelSource cpu_kernel(const std::string& name, vgpu::CpuKernelFn body) {
  vgpu::KernelSource s;
  s.name = name;
  set_cpu(s, std::move(body), "1");
  return s;
}

/// A one-way gate one thread opens and others wait at (at most kHang).
struct Gate {
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  void release() {
    std::lock_guard lock(m);
    open = true;
    cv.notify_all();
  }
  bool wait() {
    std::unique_lock lock(m);
    return cv.wait_for(lock, kHang, [&] { return open; });
  }
};

/// Knobs for two test devices (the CPU underneath; the second 300 us slower per dispatch) with
/// a salt of this run's own, so no persisted selection answers and the first call calibrates.
std::vector<std::shared_ptr<TestDeviceKnobs>> two_test_devices(const std::string& what) {
  const std::string salt = what + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  return {test_device(0, salt), test_device(300, salt)};
}

vgpu::RuntimeOptions only(vgpu::BackendKind kind) {
  vgpu::RuntimeOptions o;
  o.allowed = {kind};
  return o;
}

}  // namespace

TEST_CASE("every device: threads sharing one device get their own right results", "[locking][threads]") {
  for (const vgpu::DeviceInfo& info : every_device()) {
    INFO(info.id() << " (" << info.name << ")");
    vgpu::Device device = vgpu::Runtime::global().open(info.id());
    constexpr int kThreads = 4, kIters = 12;
    std::atomic<int> wrong{0};
    std::mutex errors_mutex;
    std::vector<std::string> errors;
    auto record = [&](const std::exception& e) {
      std::lock_guard lock(errors_mutex);
      errors.emplace_back(e.what());
    };
    std::vector<std::thread> threads;
    // Raw calls, each thread with its own sizes and fresh buffers every time; odd threads
    // submit recorded batches and synchronize, even ones dispatch.
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        try {
          const vgpu::KernelPlan plan = vgpu::ops::add(device.info(), 37 + 29 * t);
          for (int i = 0; i < kIters; ++i) wrong += add_once(device, plan, float(t), float(i), t % 2 == 1);
        } catch (const std::exception& e) {
          record(e);
        }
      });
    // A persistent kernel's round trips beside them.
    threads.emplace_back([&] {
      try {
        vgpu::PersistentKernel mul(device, vgpu::ops::mul(device.info(), 100));
        for (int i = 0; i < kIters; ++i) {
          std::vector<float> a(100, 3.0f), b(100, float(i)), out(100, -1.0f);
          mul({vgpu::TensorArg(a.data(), {100}), vgpu::TensorArg(b.data(), {100}), vgpu::TensorArg(out.data(), {100})});
          for (float v : out) wrong += v != 3.0f * float(i);
        }
      } catch (const std::exception& e) {
        record(e);
      }
    });
    // Compiles that miss every cache (a define of their own) while the others dispatch: compile
    // runs beside the device's other calls.
    threads.emplace_back([&] {
      try {
        vgpu::KernelPlan plan = vgpu::ops::add(device.info(), 50);
        for (int i = 0; i < 3; ++i) {
          plan.options.defines["VGPU_LOCKING_TEST"] = std::to_string(i);
          wrong += add_once(device, plan, 1.0f, float(i), false);
        }
      } catch (const std::exception& e) {
        record(e);
      }
    });
    for (auto& th : threads) th.join();
    for (const auto& e : errors) FAIL_CHECK("thread failed: " << e);
    CHECK(wrong == 0);
    CHECK(!device.lost());
    CHECK(add_once(device, vgpu::ops::add(device.info(), 64), 2.0f, 5.0f, false) == 0);
  }
}

TEST_CASE("GPU devices: dropping every handle of a running dispatch returns at once, and the device goes on",
          "[locking][deferred][gpu]") {
  bool any = false;
  for (const vgpu::DeviceInfo& info : every_device()) {
    if (info.backend == vgpu::BackendKind::cpu) continue;
    any = true;
    INFO(info.id() << " (" << info.name << ")");
    vgpu::Runtime runtime(only(info.backend));  // its own: the device is lost at the end
    vgpu::Device device = runtime.open(info.id());
    const Work work = work_for(device, 1.0);  // about a second of GPU work
    INFO("the spin: " << work.groups << " groups x " << work.rounds << " rounds");
    {
      Spin spin(device, work.groups);
      spin.start(work);
    }  // kernel, buffer and binding set go while the dispatch runs (or waits to be flushed)
    // The next calls wait behind that work (call order) and find the device sound; the dropped
    // objects are freed once it has finished.
    Spin again(device, 4);
    again.check({1000, 4});
    CHECK(!device.lost());
    {
      Spin spin(device, work.groups);
      spin.start(work);
    }
    // Had dropping the handles waited for the dispatch (as destroying a buffer once drained the
    // queue), nothing would run now; it still does, so a 1 ms wait gives up (losing the device).
    REQUIRE_VGPU_ERROR(timeout, "", device.synchronize(1ms));
    CHECK(device.lost());
  }  // the lost device goes once its work has ended, its dropped objects with it
  if (!any) WARN("no GPU device here: only the CPU, which runs every dispatch within its call");
}

TEST_CASE("CPU: dropping handles while another thread's dispatch holds the device does not wait for it",
          "[locking][deferred][cpu]") {
  vgpu::Runtime runtime(only(vgpu::BackendKind::cpu));
  auto device = std::make_shared<vgpu::Device>(runtime.open("cpu:0"));
  auto entered = std::make_shared<Gate>(), released = std::make_shared<Gate>();
  auto released_in_time = std::make_shared<std::atomic<bool>>(false);
  const vgpu::Kernel blocking = device->compile(cpu_kernel("test.blocking", [=](const vgpu::CpuWorkgroup&) {
    entered->release();
    *released_in_time = released->wait();
  }));
  const vgpu::BindingSet none = device->bind(blocking, std::span<const vgpu::Binding>{});
  // Handles the main thread drops while the dispatch runs: a buffer, a kernel, a binding set
  // and a batch, none of which the running dispatch uses.
  const vgpu::KernelPlan spare_plan = vgpu::ops::add(device->info(), 1000);
  auto spare = std::make_shared<RawRun>(*device, spare_plan);
  auto batch = std::make_shared<vgpu::Batch>(device->create_batch());
  batch->dispatch(spare->kernel, spare->set, spare_plan.steps[0].params, spare_plan.steps[0].groups);
  std::thread runner([device, blocking, none] { device->dispatch(blocking, none, vgpu::ParamsBlock{}, {1, 1, 1}); });
  REQUIRE(entered->wait());
  // The dispatch holds the device's call lock until the gate opens: had dropping a handle taken
  // that lock, these would wait for it (and the gate opens only after them).
  CHECK(finishes([spare = std::move(spare), batch = std::move(batch)]() mutable {
    batch.reset();  // the last handles: their backend objects are retired here
    spare.reset();
  }));
  released->release();
  runner.join();
  CHECK(*released_in_time);
  // What was dropped has been freed since; the device is sound.
  CHECK(add_once(*device, vgpu::ops::add(device->info(), 300), 4.0f, 0.5f, false) == 0);
}

TEST_CASE("CPU: a kernel that calls its own device is refused with invalid_argument, not deadlocked",
          "[locking][cpu]") {
  vgpu::Runtime runtime(only(vgpu::BackendKind::cpu));
  auto device = std::make_shared<vgpu::Device>(runtime.open("cpu:0"));
  std::weak_ptr<vgpu::Device> weak = device;
  vgpu::CompileOptions wide;
  wide.workgroup_size = {1024, 1, 1};  // a group of 1024 invocations: each group a task of its own
  // Each group waits (a little) until two have started, so that with several groups some run on
  // the TBB pool's threads, not the one holding the device, when they call it.
  auto started = std::make_shared<std::atomic<int>>(0);
  const vgpu::Kernel inner = device->compile(
      cpu_kernel("test.calls_its_device",
                 [weak, started](const vgpu::CpuWorkgroup& wg) {
                   ++*started;
                   const auto until = std::chrono::steady_clock::now() + 200ms;
                   while (wg.num_workgroups[0] > 1 && *started < 2 && std::chrono::steady_clock::now() < until)
                     std::this_thread::yield();
                   weak.lock()->create_buffer(64);  // a call on its own device
                 }),
      wide);
  const vgpu::BindingSet none = device->bind(inner, std::span<const vgpu::Binding>{});
  // One group runs on the calling thread; 64 run on the TBB pool's threads too.
  for (const std::uint32_t groups : {1u, 64u}) {
    INFO(groups << " workgroups");
    *started = 0;
    auto refused = std::make_shared<std::optional<vgpu::Error>>();
    REQUIRE(finishes([device, inner, none, refused, groups] {
      *refused = catch_error([&] { device->dispatch(inner, none, vgpu::ParamsBlock{}, {groups, 1, 1}); });
    }));
    REQUIRE(refused->has_value());
    check_error(**refused, vgpu::ErrorCategory::invalid_argument, "inside another call on the same device");
  }
  CHECK(!device->lost());
  CHECK(add_once(*device, vgpu::ops::add(device->info(), 100), 1.0f, 2.0f, false) == 0);
}

/// A runtime over two logical CPU devices and every other backend here (the software GPUs
/// lavapipe and llvmpipe where present), memory-only cache, foreground calibration.
vgpu::RuntimeOptions cpu_pair_and_every_backend() {
  vgpu::RuntimeOptions o;
  o.cpu_devices = 2;
  o.cache_enabled = false;
  o.background = false;
  return o;
}

/// A CPU kernel over slots 0 (in, read), 1 (out, write) and 2 (side, write) running body.
vgpu::KernelSource cpu_kernel_3(const std::string& name, vgpu::CpuKernelFn body) {
  vgpu::KernelSource s = cpu_kernel(name, std::move(body));
  s.bindings = {vgpu::BindingDecl{0, vgpu::Access::read, "in", nullptr},
                vgpu::BindingDecl{1, vgpu::Access::write, "out", nullptr},
                vgpu::BindingDecl{2, vgpu::Access::write, "side", nullptr}};
  return s;
}

TEST_CASE("CPU: a kernel that runs a round trip on another device gets its result and its own trip gets its reads",
          "[locking][cpu][nested]") {
  // Issue 29 item 1: the round trip's op lists were per thread, so a round trip on another
  // device made inside a CPU kernel (which runs on the calling thread) replaced the outer
  // trip's reads: its outputs were never read back (and the lists it still pointed into were
  // freed when they grew).
  vgpu::Runtime runtime(cpu_pair_and_every_backend());
  vgpu::Device outer = runtime.open("cpu:0");
  constexpr std::uint32_t kN = 256, kM = 8;  // outer elements; the inner matmul is kM x kM x kM
  std::vector<std::string> inner_ids;
  for (const vgpu::DeviceInfo& info : runtime.devices())
    if (info.id() != "cpu:0") inner_ids.push_back(info.id());
  REQUIRE(!inner_ids.empty());  // cpu:1 at least
  for (const std::string& inner_id : inner_ids) {
    INFO("inner device " << inner_id);
    vgpu::Device inner = runtime.open(inner_id);
    auto product = std::make_shared<vgpu::PersistentKernel>(inner, vgpu::ops::matmul(inner.info(), kM, kM, kM));
    // A = small integers, so A·A is exact in float on every device.
    std::vector<float> a(kM * kM);
    for (std::uint32_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 5);
    std::vector<float> aa(kM * kM, 0.0f);
    for (std::uint32_t r = 0; r < kM; ++r)
      for (std::uint32_t c = 0; c < kM; ++c)
        for (std::uint32_t p = 0; p < kM; ++p) aa[r * kM + c] += a[r * kM + p] * a[p * kM + c];
    auto wrong_inner = std::make_shared<std::atomic<int>>(0);
    // Each workgroup runs the inner product (a round trip on the inner device), checks it, and
    // then writes out = 2·in + (A·A)[0][1] and side = element index + 0.5 over its part.
    const vgpu::Kernel kernel = outer.compile(
        cpu_kernel_3("test.calls_another_device",
                     [product, a, aa, wrong_inner](const vgpu::CpuWorkgroup& wg) {
                       std::vector<float> c(kM * kM, -1.0f);
                       (*product)({vgpu::TensorArg(a.data(), {kM, kM}), vgpu::TensorArg(a.data(), {kM, kM}),
                                   vgpu::TensorArg(c.data(), {kM, kM})});
                       if (c != aa) ++*wrong_inner;
                       const float* in = wg.buffer<const float>(0);
                       float* out = wg.buffer<float>(1);
                       float* side = wg.buffer<float>(2);
                       const std::uint32_t per = kN / wg.num_workgroups[0], first = wg.workgroup_id[0] * per;
                       for (std::uint32_t i = first; i < first + per; ++i) {
                         out[i] = 2.0f * in[i] + c[1];
                         side[i] = static_cast<float>(i) + 0.5f;
                       }
                     }),
        {});
    vgpu::Buffer in = outer.create_buffer(kN * 4), out = outer.create_buffer(kN * 4),
                 side = outer.create_buffer(kN * 4);
    const std::array<vgpu::Binding, 3> bindings{vgpu::Binding{0, in}, vgpu::Binding{1, out}, vgpu::Binding{2, side}};
    const vgpu::BindingSet set = outer.bind(kernel, bindings);
    // One workgroup runs on the calling thread only; 4 run on the TBB pool's threads too.
    for (const std::uint32_t groups : {1u, 4u}) {
      INFO(groups << " workgroup(s)");
      vgpu::Batch batch = outer.create_batch();
      batch.dispatch(kernel, set, vgpu::ParamsBlock{}, {groups, 1, 1});
      int wrong_out = 0, wrong_side = 0;
      for (int call = 0; call < 5; ++call) {
        std::vector<float> x(kN), got(kN, -1.0f), got_side(kN, -1.0f);
        for (std::uint32_t i = 0; i < kN; ++i) x[i] = static_cast<float>(i + call);
        const std::array<vgpu::HostWrite, 1> writes{vgpu::HostWrite{in, x.data(), kN * 4, 0}};
        const std::array<vgpu::HostRead, 2> reads{vgpu::HostRead{out, got.data(), kN * 4, 0},
                                                  vgpu::HostRead{side, got_side.data(), kN * 4, 0}};
        REQUIRE(finishes([&] { outer.round_trip(writes, batch, reads); }));
        for (std::uint32_t i = 0; i < kN; ++i) {
          wrong_out += got[i] != 2.0f * x[i] + aa[1];
          wrong_side += got_side[i] != static_cast<float>(i) + 0.5f;
        }
      }
      CHECK(wrong_out == 0);
      CHECK(wrong_side == 0);
      CHECK(*wrong_inner == 0);
    }
  }
}

TEST_CASE("CPU: threads whose kernels run round trips on another device all get their own results",
          "[locking][cpu][nested][threads]") {
  vgpu::Runtime runtime(cpu_pair_and_every_backend());
  vgpu::Device outer = runtime.open("cpu:0");
  // The inner device: a software GPU where there is one, else the second logical CPU.
  std::string inner_id = "cpu:1";
  for (const vgpu::DeviceInfo& info : runtime.devices())
    if (info.backend == vgpu::BackendKind::vulkan || (info.backend == vgpu::BackendKind::opengl && inner_id == "cpu:1"))
      inner_id = info.id();
  INFO("inner device " << inner_id);
  vgpu::Device inner = runtime.open(inner_id);
  constexpr std::uint32_t kN = 64;
  auto add = std::make_shared<vgpu::PersistentKernel>(inner, vgpu::ops::add(inner.info(), kN));
  // out = in + in·1 computed on the inner device, side = in − 1 on the CPU.
  const vgpu::Kernel kernel =
      outer.compile(cpu_kernel_3("test.threads_call_another_device",
                                 [add](const vgpu::CpuWorkgroup& wg) {
                                   const float* in = wg.buffer<const float>(0);
                                   std::vector<float> ones(kN, 1.0f);
                                   (*add)({vgpu::TensorArg(in, {kN}), vgpu::TensorArg(ones.data(), {kN}),
                                           vgpu::TensorArg(wg.buffer<float>(1), {kN})});
                                   float* side = wg.buffer<float>(2);
                                   for (std::uint32_t i = 0; i < kN; ++i) side[i] = in[i] - 1.0f;
                                 }),
                    {});
  std::atomic<int> wrong{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      try {
        // Each thread its own buffers and batch on the shared device.
        vgpu::Buffer in = outer.create_buffer(kN * 4), out = outer.create_buffer(kN * 4),
                     side = outer.create_buffer(kN * 4);
        const std::array<vgpu::Binding, 3> bindings{vgpu::Binding{0, in}, vgpu::Binding{1, out},
                                                    vgpu::Binding{2, side}};
        vgpu::Batch batch = outer.create_batch();
        batch.dispatch(kernel, outer.bind(kernel, bindings), vgpu::ParamsBlock{}, {1, 1, 1});
        for (int call = 0; call < 20; ++call) {
          std::vector<float> x(kN), got(kN, -1.0f), got_side(kN, -1.0f);
          for (std::uint32_t i = 0; i < kN; ++i)
            x[i] = static_cast<float>(1000 * t + 10 * call) + static_cast<float>(i);
          const std::array<vgpu::HostWrite, 1> writes{vgpu::HostWrite{in, x.data(), kN * 4, 0}};
          const std::array<vgpu::HostRead, 2> reads{vgpu::HostRead{out, got.data(), kN * 4, 0},
                                                    vgpu::HostRead{side, got_side.data(), kN * 4, 0}};
          outer.round_trip(writes, batch, reads);
          for (std::uint32_t i = 0; i < kN; ++i) wrong += (got[i] != x[i] + 1.0f) + (got_side[i] != x[i] - 1.0f);
        }
      } catch (...) {
        ++failed;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  CHECK(failed == 0);
  CHECK(wrong == 0);
}

TEST_CASE("CPU: a kernel that calls its own device through another device's kernel is refused and does not deadlock",
          "[locking][cpu][nested]") {
  // cpu:0's kernel runs a kernel on cpu:1 whose workgroups call cpu:0: the device is the same
  // one its own kernel runs on, two levels up, on whatever TBB thread the groups land.
  vgpu::Runtime runtime(cpu_pair_and_every_backend());
  auto outer = std::make_shared<vgpu::Device>(runtime.open("cpu:0"));
  auto middle = std::make_shared<vgpu::Device>(runtime.open("cpu:1"));
  std::weak_ptr<vgpu::Device> weak_outer = outer, weak_middle = middle;
  vgpu::CompileOptions wide;
  wide.workgroup_size = {1024, 1, 1};  // each group a task of its own
  const vgpu::Kernel back =
      middle->compile(cpu_kernel("test.calls_the_outer_device",
                                 [weak_outer](const vgpu::CpuWorkgroup&) { weak_outer.lock()->create_buffer(64); }),
                      wide);
  const vgpu::BindingSet back_none = middle->bind(back, std::span<const vgpu::Binding>{});
  // Each group waits (a little) until two have started, so that some run on the TBB pool's
  // threads, which do not hold cpu:0 themselves, when they call cpu:1.
  auto started = std::make_shared<std::atomic<int>>(0);
  const vgpu::Kernel first = outer->compile(
      cpu_kernel("test.calls_the_middle_device",
                 [weak_middle, back, back_none, started](const vgpu::CpuWorkgroup& wg) {
                   ++*started;
                   const auto until = std::chrono::steady_clock::now() + 200ms;
                   while (wg.num_workgroups[0] > 1 && *started < 2 && std::chrono::steady_clock::now() < until)
                     std::this_thread::yield();
                   weak_middle.lock()->dispatch(back, back_none, vgpu::ParamsBlock{}, {wg.num_workgroups[0], 1, 1});
                 }),
      wide);
  const vgpu::BindingSet none = outer->bind(first, std::span<const vgpu::Binding>{});
  for (const std::uint32_t groups : {1u, 16u}) {
    INFO(groups << " workgroups");
    *started = 0;
    auto refused = std::make_shared<std::optional<vgpu::Error>>();
    REQUIRE(finishes([outer, first, none, refused, groups] {
      *refused = catch_error([&] { outer->dispatch(first, none, vgpu::ParamsBlock{}, {groups, 1, 1}); });
    }));
    REQUIRE(refused->has_value());
    check_error(**refused, vgpu::ErrorCategory::invalid_argument, "inside another call on the same device");
  }
  CHECK(add_once(*outer, vgpu::ops::add(outer->info(), 100), 1.0f, 2.0f, false) == 0);
  CHECK(add_once(*middle, vgpu::ops::add(middle->info(), 100), 1.0f, 2.0f, false) == 0);
}

TEST_CASE("CPU: a kernel that calls the PersistentKernel it runs in is refused and does not deadlock",
          "[locking][cpu][nested]") {
  vgpu::Runtime runtime(only(vgpu::BackendKind::cpu));
  vgpu::Device device = runtime.open("cpu:0");
  auto self = std::make_shared<std::weak_ptr<vgpu::PersistentKernel>>();
  vgpu::KernelPlan plan;
  plan.source = cpu_kernel("test.calls_its_persistent_kernel", [self](const vgpu::CpuWorkgroup& wg) {
    float* y = wg.buffer<float>(0);
    (*self->lock())({vgpu::TensorArg(y, {4})});  // the kernel this workgroup runs in
  });
  plan.source.bindings = {vgpu::BindingDecl{0, vgpu::Access::read_write, "y", nullptr}};
  plan.tensors = {{"y", vgpu::DType::f32, {4}, vgpu::Access::read_write, false}};
  plan.steps.push_back(vgpu::PlanStep{});
  plan.steps.back().slot_tensor = {{0, 0}};
  auto kernel = std::make_shared<vgpu::PersistentKernel>(device, plan);
  *self = kernel;
  auto refused = std::make_shared<std::optional<vgpu::Error>>();
  REQUIRE(finishes([kernel, refused] {
    std::vector<float> y(4, 1.0f);
    *refused = catch_error([&] { (*kernel)({vgpu::TensorArg(y.data(), {4})}); });
  }));
  REQUIRE(refused->has_value());
  check_error(**refused, vgpu::ErrorCategory::invalid_argument, "inside another call on the same device");
}

TEST_CASE("selection: a factory that selects another op while its own op calibrates does not deadlock",
          "[locking][select]") {
  auto runtime = std::make_shared<vgpu::Runtime>(test_runtime_options(two_test_devices("locking-nested-")));
  auto db = std::make_shared<vgpu::KernelDatabase>(*runtime);
  std::weak_ptr<vgpu::KernelDatabase> wdb = db;
  // "doubled_add" reuses the built-in add's plan, got from the same selecting database while
  // "doubled_add" itself is being calibrated (so "add" is selected and built inside that).
  db->add("doubled_add", [wdb](const vgpu::DeviceInfo&, const vgpu::Shape& s) {
    vgpu::KernelPlan p = wdb.lock()->get("add", {s[0]})->plan();
    p.source.name = "doubled_add";
    return p;
  });
  auto kernel = std::make_shared<std::shared_ptr<vgpu::PersistentKernel>>();
  REQUIRE(finishes([runtime, db, kernel] { *kernel = db->get("doubled_add", {4096}); }));
  REQUIRE(*kernel != nullptr);
  std::vector<float> a(4096, 1.5f), b(4096, 2.0f), out(4096, -1.0f);
  (**kernel)(
      {vgpu::TensorArg(a.data(), {4096}), vgpu::TensorArg(b.data(), {4096}), vgpu::TensorArg(out.data(), {4096})});
  int wrong = 0;
  for (float x : out) wrong += x != 3.5f;
  CHECK(wrong == 0);
}

TEST_CASE("selection: a calibration waiting in the user's factory does not hold up selecting another op",
          "[locking][select][threads]") {
  auto runtime = std::make_shared<vgpu::Runtime>(test_runtime_options(two_test_devices("locking-two-")));
  auto db = std::make_shared<vgpu::KernelDatabase>(*runtime);
  auto entered = std::make_shared<Gate>(), other_done = std::make_shared<Gate>();
  auto released_in_time = std::make_shared<std::atomic<bool>>(false);
  auto first = std::make_shared<std::atomic<bool>>(true);
  // The first time it is asked (while "blocker" calibrates), the factory waits until the other
  // thread has selected and built "other".
  db->add("blocker", [=](const vgpu::DeviceInfo& info, const vgpu::Shape& s) {
    if (first->exchange(false)) {
      entered->release();
      *released_in_time = other_done->wait();
    }
    return vgpu::ops::add(info, s[0]);
  });
  db->add("other", [](const vgpu::DeviceInfo& info, const vgpu::Shape& s) { return vgpu::ops::mul(info, s[0]); });
  std::thread blocked([db] { (void)db->get("blocker", {4096}); });
  REQUIRE(entered->wait());
  auto other = std::make_shared<std::shared_ptr<vgpu::PersistentKernel>>();
  const bool other_finished = finishes([db, other] { *other = db->get("other", {4096}); });
  other_done->release();
  blocked.join();
  CHECK(other_finished);
  CHECK(*released_in_time);
  CHECK(*other != nullptr);
  CHECK(db->get("blocker", {4096}) != nullptr);
}

}  // namespace vgpu_test
