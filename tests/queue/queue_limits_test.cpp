// SPDX-License-Identifier: Apache-2.0
// tests/queue/queue_limits_test.cpp — the queue against device limits it cannot meet here with a
// real device: a reservation that fails (an injected out-of-memory), a buffer limit that splits
// a queue into several round trips and refuses one payload too large for it, and a group-count
// limit that splits launches, and a driver's loop limit that spreads long items over lanes.
// Each runs on a test device over the CPU device, so only in the queue.cpu run (the other kinds
// would run the same thing again).
#include "support/catch.hpp"

#include <algorithm>
#include <cstring>
#include <span>
#include <vector>

#include "queue/queue_suite.hpp"
#include "support/expect_error.hpp"
#include "support/queue_test_kernel.hpp"
#include "support/cpu_variant_backend.hpp"
#include "support/test_backend.hpp"

namespace vgpu_test {
namespace {

bool cpu_under_test() {
  for (const vgpu::Device& d : queue_devices())
    if (d.info().backend == vgpu::BackendKind::cpu) return true;
  return false;
}

// Options whose one backend's device is the CPU device with a small buffer limit and
// group-count limit, and optionally a loop limit and group-count limit along y (lanes) as a
// software GPU has.
vgpu::RuntimeOptions limited_options(std::uint64_t max_buffer_bytes, std::uint32_t max_groups_x,
                                     std::uint32_t max_loops = 0, std::uint32_t max_groups_y = 65535) {
  vgpu::RuntimeOptions o;
  o.backends.push_back(std::make_shared<CpuVariantBackend>([=](vgpu::DeviceInfo& d) {
    d.name = "limited test device";
    d.limits.max_buffer_bytes = max_buffer_bytes;
    d.limits.max_workgroup_count[0] = max_groups_x;
    d.limits.max_workgroup_count[1] = max_groups_y;
    d.limits.max_loop_iterations = max_loops;
    d.fingerprint = vgpu::make_fingerprint(
        {{"queue_limited", std::to_string(max_buffer_bytes) + "/" + std::to_string(max_groups_x) + "/" +
                               std::to_string(max_loops) + "/" + std::to_string(max_groups_y)}});
  }));
  return o;
}

vgpu::PersistentQueue counting_queue(std::size_t n) {
  vgpu::PersistentQueue q;
  for (std::size_t i = 0; i < n; ++i) q.push_value(3 * i + 1, static_cast<std::uint32_t>(i));
  return q;
}

void check_counting(const vgpu::QueueReport& r, const vgpu::PersistentQueue& q) {
  REQUIRE(r.results.size() == q.size());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < q.size(); ++i)
    wrong += r.results[i].id != q.id(i) || r.results[i].as<std::uint32_t>() != i + 1;
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("queue: a reservation the device cannot make fails with 'split the queue', then runs", "[queue]") {
  if (!cpu_under_test()) return;
  auto knobs = test_device(0, "queue-oom");
  vgpu::Runtime rt(test_runtime_options({knobs}));
  vgpu::Device device = rt.open("test:0");
  vgpu::QueuePipeline pipeline(device, vgpu::queue_add_one_kernel());
  const vgpu::PersistentQueue q = counting_queue(1000);
  knobs->fail_alloc = true;
  REQUIRE_VGPU_ERROR(out_of_memory, "split the queue", pipeline.run(q));
  CHECK(q.size() == 1000);
  knobs->fail_alloc = false;
  check_counting(pipeline.run(q), q);
  // Grown once, a queue of the same size needs no allocation, so the knob no longer matters.
  knobs->fail_alloc = true;
  check_counting(pipeline.run(q), q);
  // A larger one must grow: it fails, and the pipeline still runs the smaller one afterwards.
  const vgpu::PersistentQueue larger = counting_queue(100000);
  REQUIRE_VGPU_ERROR(out_of_memory, "split the queue", pipeline.run(larger));
  check_counting(pipeline.run(q), q);
}

TEST_CASE("queue: a buffer limit splits the queue into round trips and refuses a payload larger than it", "[queue]") {
  if (!cpu_under_test()) return;
  constexpr std::uint64_t limit = 64 * 1024;
  vgpu::Runtime rt(limited_options(limit, 65535));
  vgpu::Device device = rt.open("test:0");
  vgpu::QueuePipeline pipeline(device, vgpu::queue_add_one_kernel());
  // 20 bytes of `in` per item: 10 000 items need 200 000 bytes, at least 4 round trips.
  const vgpu::PersistentQueue q = counting_queue(10000);
  const auto r = pipeline.run(q);
  CHECK(r.round_trips == 4);
  CHECK(r.kernel_launches == 4);
  check_counting(r, q);
  vgpu::PersistentQueue huge;
  huge.push_value(1, std::uint32_t{1});
  huge.push(99, std::vector<std::byte>(limit));
  REQUIRE_VGPU_ERROR(invalid_argument, "item id 99 (position 1)", pipeline.run(huge));
  check_counting(pipeline.run(q), q);
}

TEST_CASE("queue: a group-count limit splits a local-size-1 kernel into the fewest launches", "[queue]") {
  if (!cpu_under_test()) return;
  vgpu::Runtime rt(limited_options(0, 1000));
  vgpu::Device device = rt.open("test:0");
  vgpu::QueueConfig c;
  c.options.workgroup_size = {1, 1, 1};
  vgpu::QueuePipeline pipeline(device, vgpu::queue_add_one_kernel(), c);
  const vgpu::PersistentQueue q = counting_queue(100000);
  const auto r = pipeline.run(q);
  CHECK(r.kernel_launches == 100);
  CHECK(r.round_trips == 1);
  check_counting(r, q);
  const vgpu::PersistentQueue odd = counting_queue(2001);
  const auto r2 = pipeline.run(odd);
  CHECK(r2.kernel_launches == 3);
  check_counting(r2, odd);
}

TEST_CASE("queue: a device that cuts loops short gets long items spread over lanes, or refused", "[queue][loops]") {
  if (!cpu_under_test()) return;
  // A loop limit of 400: no lane may walk more than 100 words (a quarter of it).
  vgpu::Runtime rt(limited_options(0, 65535, 400, 8));
  vgpu::Device device = rt.open("test:0");
  auto items = [](std::vector<std::uint32_t> words) {
    vgpu::PersistentQueue q;
    std::uint32_t v = 1;
    for (std::size_t i = 0; i < words.size(); ++i) {
      std::vector<std::uint32_t> w(words[i]);
      for (auto& x : w) x = v++ * 2654435761u;
      q.push(70 + i, std::as_bytes(std::span<const std::uint32_t>(w)));
    }
    return q;
  };
  auto check_words = [](const vgpu::QueueReport& r, const vgpu::PersistentQueue& q) {
    REQUIRE(r.results.size() == q.size());
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < q.size(); ++i) {
      const auto in = q.payload(i), out = r.results[i].payload;
      if (out.size() != in.size()) {
        ++wrong;
        continue;
      }
      for (std::size_t w = 0; w < in.size() / 4; ++w) {
        std::uint32_t a = 0, b = 0;
        std::memcpy(&a, in.data() + 4 * w, 4);
        std::memcpy(&b, out.data() + 4 * w, 4);
        wrong += b != a + 1;
      }
    }
    CHECK(wrong == 0);
  };
  // 750 words need 8 lanes of at most 100: the add-one kernel splits over them.
  const vgpu::PersistentQueue long_items = items({3, 750, 100, 101, 0});
  vgpu::QueuePipeline add_one(device, vgpu::queue_add_one_kernel());
  check_words(add_one.run(long_items), long_items);
  // Short items keep one lane, so a kernel that ignores lanes runs as before ...
  vgpu::QueueConfig probe;
  probe.output_bytes = kProbeCapacity;
  vgpu::QueuePipeline ignores_lanes(device, queue_probe_kernel(), probe);
  vgpu::PersistentQueue short_items;
  for (std::uint32_t i = 0; i < 20; ++i) short_items.push(i, std::vector<std::byte>(4 * i, std::byte{9}));
  const auto r = ignores_lanes.run(short_items);
  REQUIRE(r.results.size() == 20);
  for (std::uint32_t i = 0; i < 20; ++i) CHECK(r.results[i].payload.size() == 4 + 4 * i);
  // ... and on a long item fails loudly, saying why there were lanes, where it would have
  // returned words it never wrote on a real device.
  vgpu::PersistentQueue one_long;
  one_long.push(5, std::vector<std::byte>(4 * 64, std::byte{1}));
  probe.output_bytes = 4 * 64 + 4 + 4 * 300;  // an output area of 365 words: 4 lanes
  vgpu::QueuePipeline wide(device, queue_probe_kernel(), probe);
  REQUIRE_VGPU_ERROR(invalid_argument, "stops a shader's loops after 400 iterations", wide.run(one_long));
  // An item longer than 8 lanes of 100 words is refused, naming it, before anything runs.
  const vgpu::PersistentQueue too_long = items({5, 801});
  REQUIRE_VGPU_ERROR(invalid_argument, "item id 71 (position 1)", add_one.run(too_long));
  check_words(add_one.run(long_items), long_items);
}

}  // namespace vgpu_test
