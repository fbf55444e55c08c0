// SPDX-License-Identifier: Apache-2.0
// tests/contract/device_loss_test.cpp — in-place recovery from device loss on every backend
// (label device_loss): a Device survives testing::force_device_lost; its next call reopens the
// backend device and rebuilds every live object on it (kernels compiled again through L2, so no
// source compile where L2 holds them), a PersistentKernel, a raw dispatch, a batch and
// Cache::matmul give right results afterwards, a user buffer that lost its contents raises
// device_lost with "write the data again" until it is written, and a loss during a run
// (LossPoint::next_wait, the backend's own detection path) is retried once, transparently.
// Sizes are awkward (1000 elements, a 17×33×9 matmul) and outputs start poisoned.
#include <cmath>
#include <cstring>
#include <limits>
#include <span>

#include "contract/contract.hpp"
#include "support/expect_error.hpp"
#include "support/numerics.hpp"
#include "support/scale_add_kernel.hpp"
#include "vgpu/queue_kernels.hpp"
#include "vgpu/testing.hpp"

namespace vgpu_test::contract {
namespace {

using vgpu::testing::force_device_lost;
using vgpu::testing::LossPoint;

constexpr std::uint32_t kN = 1000;  // not a multiple of the 64-wide workgroup
constexpr float kScale = 1.75f;
const float kPoison = std::numeric_limits<float>::quiet_NaN();

vgpu::Groups scale_add_groups(std::uint32_t n) { return spread((n + 63) / 64); }

/// A one-step plan over the scale-add kernel: out = a·scale + b on n elements.
vgpu::KernelPlan scale_add_plan(const vgpu::KernelSource& source, std::uint32_t n) {
  vgpu::KernelPlan plan;
  plan.source = source;
  plan.options = scale_add_options();
  plan.tensors = {{"a", vgpu::DType::f32, {n}, vgpu::Access::read},
                  {"b", vgpu::DType::f32, {n}, vgpu::Access::read},
                  {"out", vgpu::DType::f32, {n}, vgpu::Access::write}};
  plan.steps = {
      {{{0, 0}, {1, 1}, {2, 2}}, vgpu::ParamsBlock::of(ScaleAddParams{n, kScale, 0, 0}), scale_add_groups(n)}};
  return plan;
}

/// Calls kernel on fresh random inputs (seed) into a poisoned output and checks every element.
void check_plan_call(vgpu::PersistentKernel& kernel, std::uint64_t seed) {
  const std::vector<float> a = random_floats(kN, seed), b = random_floats(kN, seed + 1);
  std::vector<float> out(kN, kPoison);
  kernel({vgpu::TensorArg(a.data(), {kN}), vgpu::TensorArg(b.data(), {kN}), vgpu::TensorArg(out.data(), {kN})});
  const Comparison c = compare(out, scale_add_reference(a, b, kScale));
  INFO("call with seed " << seed << ": " << c.describe());
  CHECK(c.ok());
}

/// True when device keeps the user kernel in L2 here, so a recompile must come from it.
bool l2_applies(const Backend& backend, const vgpu::Device& device) {
  if (!backend.has_l2()) return false;
  const std::string why = why_no_l2_round_trip(backend, device);
  if (!why.empty()) WARN("L2 checks skipped: " << why);
  return why.empty();
}

/// Checks what a recovery counted: one loss, one recovery, and (with L2) the kernels loaded
/// from L2 without a front-end compile.
void check_recovered(const vgpu::CounterSnapshot& d, bool with_l2) {
  INFO("counters over the loss: " << d.to_string());
  CHECK(d.device_losses == 1);
  CHECK(d.recoveries == 1);
  if (with_l2) {
    CHECK(d.l2_hits >= 1);
    CHECK(d.source_compiles == 0);
  }
}

struct Buffers {
  vgpu::Buffer a, b, out;
};

/// Makes the three buffers of a raw scale-add run and fills a and b (seed).
Buffers filled_buffers(vgpu::Device& device, std::uint64_t seed, std::vector<float>& a, std::vector<float>& b) {
  a = random_floats(kN, seed);
  b = random_floats(kN, seed + 1);
  Buffers bufs{device.create_buffer(kN * 4), device.create_buffer(kN * 4), device.create_buffer(kN * 4)};
  device.write(bufs.a, a.data(), kN * 4);
  device.write(bufs.b, b.data(), kN * 4);
  const std::vector<float> poison(kN, kPoison);
  device.write(bufs.out, poison.data(), kN * 4);
  return bufs;
}

void check_out(vgpu::Device& device, const Buffers& bufs, const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> out(kN, 0.0f);
  device.read(bufs.out, out.data(), kN * 4);
  const Comparison c = compare(out, scale_add_reference(a, b, kScale));
  INFO(c.describe());
  CHECK(c.ok());
}

/// A queue of n items with ids 1000 + 7i, item i a payload of (i % 5) u32 words from seed.
vgpu::PersistentQueue add_one_queue(std::uint32_t n, std::uint64_t seed,
                                    std::vector<std::vector<std::uint32_t>>& words) {
  vgpu::PersistentQueue queue;
  words.assign(n, {});
  std::uint32_t x = static_cast<std::uint32_t>(seed) * 2654435761u;
  for (std::uint32_t i = 0; i < n; ++i) {
    for (std::uint32_t w = 0; w < i % 5; ++w) words[i].push_back(x = x * 1664525u + 1013904223u);
    queue.push(1000 + 7ull * i, std::as_bytes(std::span<const std::uint32_t>(words[i])));
  }
  return queue;
}

/// Checks that report holds one result per item of the add-one queue, in order, ids kept.
void check_add_one(const vgpu::QueueReport& report, const std::vector<std::vector<std::uint32_t>>& words) {
  REQUIRE(report.results.size() == words.size());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const vgpu::QueueResult& r = report.results[i];
    bool ok = r.id == 1000 + 7ull * i && r.payload.size() == words[i].size() * 4;
    for (std::size_t w = 0; ok && w < words[i].size(); ++w) {
      std::uint32_t got = 0;
      std::memcpy(&got, r.payload.data() + 4 * w, 4);
      ok = got == words[i][w] + 1;
    }
    wrong += ok ? 0 : 1;
  }
  INFO(wrong << " of " << words.size() << " queue results wrong");
  CHECK(wrong == 0);
}

}  // namespace

CONTRACT_CASE(
    "device_loss: a loss before a run recovers the device in place, the PersistentKernel's kernel comes "
    "from L2 and its results are right",
    "[device_loss]", every_backend) {
  if (const std::string& why = why_unavailable(backend); !why.empty()) return skip(why);
  vgpu::Device device = open_device(backend);
  const bool with_l2 = l2_applies(backend, device);
  vgpu::PersistentKernel kernel(device, scale_add_plan(fresh_user_kernel(backend), kN));
  check_plan_call(kernel, 11);  // compiled from source: its artifact is in L2 now (where kept)
  const vgpu::CounterSnapshot before = device.counters();
  force_device_lost(device, LossPoint::now);
  CHECK(device.lost());
  check_plan_call(kernel, 12);
  CHECK(!device.lost());
  check_recovered(device.counters() - before, with_l2);
  check_plan_call(kernel, 13);  // and it stays right
  CHECK((device.counters() - before).recoveries == 1);
}

CONTRACT_CASE("device_loss: a loss between two runs of a PersistentKernel and of Cache::matmul costs no wrong result",
              "[device_loss]", every_backend) {
  if (const std::string& why = why_unavailable(backend); !why.empty()) return skip(why);
  vgpu::Device device = open_device(backend);
  const bool with_l2 = l2_applies(backend, device);
  {
    vgpu::PersistentKernel kernel(device, scale_add_plan(fresh_user_kernel(backend), kN));
    check_plan_call(kernel, 21);
    const vgpu::CounterSnapshot before = device.counters();
    force_device_lost(device, LossPoint::now);
    check_plan_call(kernel, 22);
    check_recovered(device.counters() - before, with_l2);
  }
  vgpu::Cache cache(device);
  const std::uint32_t m = 17, k = 33, n = 9;
  const std::vector<float> a = random_floats(m * k, 23), b = random_floats(k * n, 24);
  auto run = [&] {
    std::vector<float> c(m * n, kPoison);
    cache.matmul(a.data(), b.data(), c.data(), m, k, n);
    const Comparison cmp = compare(c, matmul_reference(a, b, m, k, n));
    INFO("matmul " << m << "x" << k << "x" << n << ": " << cmp.describe());
    CHECK(cmp.ok());
  };
  run();
  const vgpu::CounterSnapshot before = device.counters();
  force_device_lost(device, LossPoint::now);
  run();
  const vgpu::CounterSnapshot d = device.counters() - before;
  INFO("matmul over the loss: " << d.to_string());
  CHECK(d.recoveries == 1);
  if (with_l2) CHECK(d.source_compiles == 0);  // the built-in comes back from L2 (or L3), not from its source
  run();
}

CONTRACT_CASE("device_loss: a user buffer after a loss raises device_lost until it is written again", "[device_loss]",
              every_backend) {
  if (const std::string& why = why_unavailable(backend); !why.empty()) return skip(why);
  vgpu::Device device = open_device(backend);
  std::vector<float> a, b;
  const Buffers bufs = filled_buffers(device, 31, a, b);
  const vgpu::Kernel kernel = device.compile(fresh_user_kernel(backend), scale_add_options());
  const vgpu::BindingSet set = device.bind(kernel, {{0, bufs.a}, {1, bufs.b}, {2, bufs.out}});
  const vgpu::ParamsBlock params = vgpu::ParamsBlock::of(ScaleAddParams{kN, kScale, 0, 0});
  force_device_lost(device, LossPoint::now);

  std::vector<float> got(kN, 0.0f);
  const vgpu::Buffer spare = device.create_buffer(kN * 4);  // this call recovers the device
  CHECK(device.counters().recoveries >= 1);
  REQUIRE_VGPU_ERROR(device_lost, "write the data again", device.read(bufs.a, got.data(), kN * 4));
  REQUIRE_VGPU_ERROR(device_lost, "has lost its contents", device.copy(bufs.b, spare, kN * 4));
  REQUIRE_VGPU_ERROR(device_lost, "'a'", device.dispatch(kernel, set, params, scale_add_groups(kN)));
  // Half of a written: its other half is still lost, and the written half reads back.
  device.write(bufs.a, a.data(), kN * 2);
  std::vector<float> half(kN / 2, 0.0f);
  device.read(bufs.a, half.data(), kN * 2);
  CHECK(std::equal(half.begin(), half.end(), a.begin()));
  REQUIRE_VGPU_ERROR(device_lost, "write the data again", device.read(bufs.a, got.data(), kN * 4));
  // Written again, both inputs work; out is bound at a write-only slot, so the dispatch rewrites it.
  device.write(bufs.a, a.data() + kN / 2, kN * 2, kN * 2);
  device.write(bufs.b, b.data(), kN * 4);
  device.dispatch(kernel, set, params, scale_add_groups(kN));
  check_out(device, bufs, a, b);
}

CONTRACT_CASE("device_loss: a raw dispatch and a recorded batch on the same Device handle work after a loss",
              "[device_loss]", every_backend) {
  if (const std::string& why = why_unavailable(backend); !why.empty()) return skip(why);
  vgpu::Device device = open_device(backend);
  const bool with_l2 = l2_applies(backend, device);
  std::vector<float> a, b;
  const Buffers bufs = filled_buffers(device, 41, a, b);
  const vgpu::Kernel kernel = device.compile(fresh_user_kernel(backend), scale_add_options());
  const vgpu::BindingSet set = device.bind(kernel, {{0, bufs.a}, {1, bufs.b}, {2, bufs.out}});
  const vgpu::ParamsBlock params = vgpu::ParamsBlock::of(ScaleAddParams{kN, kScale, 0, 0});
  vgpu::Batch batch = device.create_batch();
  batch.dispatch(kernel, set, params, scale_add_groups(kN));
  device.submit(batch);
  check_out(device, bufs, a, b);

  const vgpu::CounterSnapshot before = device.counters();
  force_device_lost(device, LossPoint::now);
  device.write(bufs.a, a.data(), kN * 4);  // recovers, then writes
  device.write(bufs.b, b.data(), kN * 4);
  check_recovered(device.counters() - before, with_l2);
  device.dispatch(kernel, set, params, scale_add_groups(kN));
  check_out(device, bufs, a, b);

  force_device_lost(device, LossPoint::now);
  const std::vector<float> a2 = random_floats(kN, 42), b2 = random_floats(kN, 43);
  device.write(bufs.a, a2.data(), kN * 4);
  device.write(bufs.b, b2.data(), kN * 4);
  device.submit(batch);  // recorded again on the fresh device
  check_out(device, bufs, a2, b2);
  CHECK((device.counters() - before).recoveries == 2);
}

CONTRACT_CASE("device_loss: a loss during a run (the backend's wait reports it) is retried once, transparently",
              "[device_loss]", every_backend) {
  if (const std::string& why = why_unavailable(backend); !why.empty()) return skip(why);
  vgpu::Device device = open_device(backend);
  vgpu::PersistentKernel kernel(device, scale_add_plan(fresh_user_kernel(backend), kN));
  check_plan_call(kernel, 51);
  const vgpu::CounterSnapshot before = device.counters();
  force_device_lost(device, LossPoint::next_wait);
  check_plan_call(kernel, 52);  // the trip fails as a lost device's would; the kernel recovers and runs again
  const vgpu::CounterSnapshot d = device.counters() - before;
  INFO("counters over the loss: " << d.to_string());
  CHECK(d.device_losses == 1);
  CHECK(d.recoveries == 1);
  CHECK(!device.lost());
  // A raw call in flight when the loss strikes reports it; the next call recovers.
  std::vector<float> a, b;
  const Buffers bufs = filled_buffers(device, 53, a, b);
  const vgpu::Kernel k = device.compile(fresh_user_kernel(backend), scale_add_options());
  const vgpu::BindingSet set = device.bind(k, {{0, bufs.a}, {1, bufs.b}, {2, bufs.out}});
  const vgpu::ParamsBlock params = vgpu::ParamsBlock::of(ScaleAddParams{kN, kScale, 0, 0});
  force_device_lost(device, LossPoint::next_wait);
  REQUIRE_VGPU_ERROR(device_lost, "call again", {
    device.dispatch(k, set, params, scale_add_groups(kN));
    device.synchronize();
  });
  device.write(bufs.a, a.data(), kN * 4);
  device.write(bufs.b, b.data(), kN * 4);
  device.dispatch(k, set, params, scale_add_groups(kN));
  check_out(device, bufs, a, b);
  CHECK((device.counters() - before).recoveries == 2);
}

CONTRACT_CASE("device_loss: a queue run after a loss and one during which the device is lost give every result",
              "[device_loss][queue]", every_backend) {
  if (const std::string& why = why_unavailable(backend); !why.empty()) return skip(why);
  vgpu::Device device = open_device(backend);
  const bool with_l2 = l2_applies(backend, device);
  vgpu::QueuePipeline pipeline(device, vgpu::queue_add_one_kernel());
  std::vector<std::vector<std::uint32_t>> words;
  const vgpu::PersistentQueue queue = add_one_queue(333, 61, words);
  check_add_one(pipeline.run(queue), words);

  const vgpu::CounterSnapshot before = device.counters();
  force_device_lost(device, LossPoint::now);
  const vgpu::QueueReport after = pipeline.run(queue);
  CHECK(after.kernel_launches == 1);
  check_add_one(after, words);
  const vgpu::CounterSnapshot d = device.counters() - before;
  INFO("queue run over the loss: " << d.to_string());
  CHECK(d.recoveries == 1);
  if (with_l2 && backend.kind != vgpu::BackendKind::cpu) CHECK(d.source_compiles == 0);

  // Lost during the run: the run's wait reports it, the pipeline retries once on the recovered device.
  std::vector<std::vector<std::uint32_t>> words2;
  const vgpu::PersistentQueue queue2 = add_one_queue(100, 62, words2);
  const vgpu::CounterSnapshot before2 = device.counters();
  force_device_lost(device, LossPoint::next_wait);
  check_add_one(pipeline.run(queue2), words2);
  const vgpu::CounterSnapshot d2 = device.counters() - before2;
  INFO("queue run lost during it: " << d2.to_string());
  CHECK(d2.device_losses == 1);
  CHECK(d2.recoveries == 1);
  CHECK(!device.lost());
  check_add_one(pipeline.run(queue), words);
}

}  // namespace vgpu_test::contract
