// SPDX-License-Identifier: Apache-2.0
// tests/queue/queue_test.cpp — PersistentQueue and QueuePipeline on every device under test:
// the design's add-one (16 items, one launch), an empty queue, 100 000 items split into the
// fewest launches, mixed payload sizes, every error (the queue and pipeline intact after
// each), steady state over 1 000 runs and a poisoned output buffer.
#include "support/catch.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <span>

#include "queue/queue_suite.hpp"
#include "support/expect_error.hpp"
#include "support/queue_test_kernel.hpp"

namespace vgpu_test {
namespace {

using vgpu::PersistentQueue;
using vgpu::QueueConfig;
using vgpu::QueuePipeline;
using vgpu::QueueReport;

bool is_glsl_device(const vgpu::Device& d) {
  return d.info().backend == vgpu::BackendKind::vulkan || d.info().backend == vgpu::BackendKind::opengl;
}

// A queue of n items with shuffled distinct ids and one random u32 each; values[i] is item i's.
PersistentQueue u32_queue(std::size_t n, std::uint32_t seed, std::vector<std::uint32_t>& values) {
  std::mt19937 rng(seed);
  std::vector<std::uint64_t> ids(n);
  std::iota(ids.begin(), ids.end(), std::uint64_t{1} << 40);
  std::shuffle(ids.begin(), ids.end(), rng);
  PersistentQueue q;
  values.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    values[i] = static_cast<std::uint32_t>(rng()) & 0x7FFFFFFFu;
    q.push_value(ids[i], values[i]);
  }
  return q;
}

// Checks an add-one report: one result per item in queue order, ids kept, each value + 1.
void check_add_one(const QueueReport& r, const PersistentQueue& q, const std::vector<std::uint32_t>& values) {
  REQUIRE(r.results.size() == q.size());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < q.size(); ++i) {
    const bool ok = r.results[i].id == q.id(i) && r.results[i].payload.size() == 4 &&
                    r.results[i].as<std::uint32_t>() == values[i] + 1;
    if (!ok && wrong++ < 5) UNSCOPED_INFO("item " << i << " (id " << q.id(i) << ") came back wrong");
  }
  CHECK(wrong == 0);
}

// Checks a probe report against probe_reference for every item.
void check_probe(const QueueReport& r, const PersistentQueue& q) {
  REQUIRE(r.results.size() == q.size());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < q.size(); ++i) {
    const auto want = probe_reference(q.payload(i));
    const auto got = r.results[i].payload;
    const bool ok =
        r.results[i].id == q.id(i) && got.size() == want.size() && std::equal(got.begin(), got.end(), want.begin());
    if (!ok && wrong++ < 5)
      UNSCOPED_INFO("item " << i << " (id " << q.id(i) << ", " << q.payload(i).size() << " bytes) came back wrong");
  }
  CHECK(wrong == 0);
}

QueueConfig probe_config() {
  QueueConfig c;
  c.output_bytes = kProbeCapacity;
  return c;
}

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

// A queue of items whose payloads are bytes_of[i] random bytes each (ids 500 + i).
PersistentQueue byte_queue(const std::vector<std::uint32_t>& bytes_of, std::uint32_t seed) {
  std::mt19937 rng(seed);
  PersistentQueue q;
  for (std::size_t i = 0; i < bytes_of.size(); ++i) {
    std::vector<std::byte> b(bytes_of[i]);
    for (auto& v : b) v = static_cast<std::byte>(rng());
    q.push(500 + i, b);
  }
  return q;
}

// A queue of items whose payloads are words_of[i] random u32 words each (ids 500 + i).
PersistentQueue word_queue(std::vector<std::uint32_t> words_of, std::uint32_t seed) {
  for (auto& w : words_of) w *= 4;
  return byte_queue(words_of, seed);
}

// Checks an add-one report word by word: item i's output is its payload's whole words, each plus 1.
void check_add_one_words(const QueueReport& r, const PersistentQueue& q) {
  REQUIRE(r.results.size() == q.size());
  for (std::size_t i = 0; i < q.size(); ++i) {
    INFO("item " << i << " (id " << q.id(i) << ", " << q.payload(i).size() / 4 << " words)");
    const auto in = q.payload(i);
    const auto out = r.results[i].payload;
    CHECK(r.results[i].id == q.id(i));
    REQUIRE(out.size() == in.size() / 4 * 4);
    std::size_t wrong = 0, first_wrong = 0;
    for (std::size_t w = 0; w < in.size() / 4; ++w) {
      std::uint32_t a = 0, b = 0;
      std::memcpy(&a, in.data() + 4 * w, 4);
      std::memcpy(&b, out.data() + 4 * w, 4);
      if (b != a + 1 && wrong++ == 0) first_wrong = w;
    }
    INFO(wrong << " words wrong, the first at word " << first_wrong);
    CHECK(wrong == 0);
  }
}

}  // namespace

TEST_CASE("queue: the design's add-one runs 16 items in one launch, results in order with their ids", "[queue]") {
  for (vgpu::Device device : queue_devices()) {
    INFO("device " << device.info().id());
    std::vector<vgpu::KernelSource> kernels{vgpu::queue_add_one_kernel()};
    if (is_glsl_device(device)) kernels.push_back(vgpu::queue_add_one_shader_kernel());
    for (const auto& kernel : kernels) {
      INFO("kernel " << kernel.name);
      std::vector<std::uint32_t> values;
      const PersistentQueue q = u32_queue(16, 16, values);
      QueuePipeline pipeline(device, kernel);
      const QueueReport r = pipeline.run(q);
      CHECK(r.kernel_launches == 1);
      CHECK(r.round_trips == 1);
      check_add_one(r, q, values);
      // The design's free function: the same through the process-wide pipeline, twice.
      const QueueReport r2 = vgpu::run(device, kernel, {}, q);
      CHECK(r2.kernel_launches == 1);
      check_add_one(r2, q, values);
      const auto before = device.counters();
      const QueueReport r3 = vgpu::run(device, kernel, {}, q);
      const auto d = device.counters() - before;
      CHECK(d.allocations == 0);
      CHECK(d.compiles == 0);
      CHECK(d.binds == 0);
      check_add_one(QueueReport(r3), q, values);  // a copy points into its own storage
    }
  }
}

TEST_CASE("queue: an empty queue returns at once with no launch, no result and nothing touched", "[queue]") {
  for (vgpu::Device device : queue_devices()) {
    INFO("device " << device.info().id());
    QueuePipeline pipeline(device, vgpu::queue_add_one_kernel());
    const PersistentQueue empty;
    const std::string before = device.counters().to_string();
    const QueueReport r = pipeline.run(empty);
    const QueueReport r2 = vgpu::run(device, vgpu::queue_add_one_kernel(), {}, empty);
    CHECK(device.counters().to_string() == before);
    CHECK(r.kernel_launches == 0);
    CHECK(r.round_trips == 0);
    CHECK(r.results.empty());
    CHECK(r2.kernel_launches == 0);
    CHECK(r2.results.empty());
    CHECK(pipeline.runs() == 1);
  }
}

TEST_CASE("queue: 100 000 items run in the fewest launches the limits allow, each counted", "[queue]") {
  constexpr std::size_t n = 100000;
  std::vector<std::uint32_t> values;
  const PersistentQueue q = u32_queue(n, 7, values);
  for (vgpu::Device device : queue_devices()) {
    INFO("device " << device.info().id());
    const std::uint64_t max_groups = device.info().limits.max_workgroup_count[0];
    SECTION("the device's own limits") {
      QueuePipeline pipeline(device, vgpu::queue_add_one_kernel());
      const QueueReport r = pipeline.run(q);
      CHECK(r.kernel_launches == ceil_div(n, max_groups * pipeline.kernel().workgroup_size()[0]));
      check_add_one(r, q, values);
    }
    SECTION("max_items_per_launch forces a split") {
      QueueConfig c;
      c.max_items_per_launch = 30000;
      QueuePipeline pipeline(device, vgpu::queue_add_one_kernel(), c);
      const QueueReport r = pipeline.run(q);
      CHECK(r.kernel_launches == 4);
      CHECK(r.round_trips == 1);
      check_add_one(r, q, values);
    }
    SECTION("a local size of 1: the group-count limit decides") {
      QueueConfig c;
      c.options.workgroup_size = {1, 1, 1};
      QueuePipeline pipeline(device, vgpu::queue_add_one_kernel(), c);
      REQUIRE(pipeline.kernel().workgroup_size()[0] == 1);
      const QueueReport r = pipeline.run(q);
      CHECK(r.kernel_launches == ceil_div(n, max_groups));
      check_add_one(r, q, values);
    }
  }
}

TEST_CASE("queue: mixed payload sizes come back right, each output depending on its length", "[queue]") {
  std::mt19937 rng(255);
  PersistentQueue q;
  std::uint64_t id = 0;
  auto push_random = [&](std::size_t bytes) {
    std::vector<std::byte> p(bytes);
    for (auto& b : p) b = static_cast<std::byte>(rng());
    if (bytes == 4) p[3] = std::byte{0};  // never a magic word
    q.push(id += 1 + rng() % 5, p);
  };
  for (std::size_t bytes : {0, 1, 3, 4, 5, 255, 256}) push_random(bytes);
  for (int i = 0; i < 300; ++i) push_random(rng() % 257);
  for (vgpu::Device device : queue_devices()) {
    INFO("device " << device.info().id());
    QueuePipeline pipeline(device, queue_probe_kernel(), probe_config());
    const QueueReport r = pipeline.run(q);
    CHECK(r.kernel_launches == 1);
    check_probe(r, q);
  }
}

TEST_CASE("queue: a poisoned output buffer does not leak into the next run's results", "[queue]") {
  for (vgpu::Device device : queue_devices()) {
    INFO("device " << device.info().id());
    QueuePipeline pipeline(device, queue_probe_kernel(), probe_config());
    // Fill every result entry and output area with garbage (the run itself fails: 5 emits).
    PersistentQueue poison;
    for (std::uint64_t i = 0; i < 200; ++i) poison.push(i, magic_payload(kPoison));
    REQUIRE_VGPU_ERROR(invalid_argument, "5 outputs", pipeline.run(poison));
    PersistentQueue q;
    std::mt19937 rng(3);
    for (std::uint64_t i = 0; i < 150; ++i) {
      std::vector<std::byte> p(rng() % 9);
      for (auto& b : p) b = static_cast<std::byte>(rng() & 0x7F);
      q.push(1000 + i, p);
    }
    check_probe(pipeline.run(q), q);
  }
}

TEST_CASE("queue: every error names what is wrong, and the queue and pipeline stay usable", "[queue]") {
  for (vgpu::Device device : queue_devices()) {
    INFO("device " << device.info().id());
    QueuePipeline pipeline(device, queue_probe_kernel(), probe_config());
    PersistentQueue good;
    for (std::uint64_t i = 0; i < 40; ++i) good.push_value(500 + i, static_cast<std::uint32_t>(i * 7919));
    auto still_works = [&] { check_probe(pipeline.run(good), good); };
    struct Case {
      std::uint32_t magic;
      const char* fragment;
    };
    for (const Case& c :
         {Case{kNoEmit, "item id 77 (position 2) got no output"},
          Case{kEmitTwice, "item id 77 (position 2) got 2 outputs"}, Case{kTooMany, "261 output bytes for item id 77"},
          Case{kUnguarded, "output count differs from the item count"}}) {
      INFO("magic " << std::hex << c.magic);
      PersistentQueue q;
      const std::uint32_t plain = 5;
      if (c.magic == kUnguarded) {
        q.push(77, magic_payload(c.magic));  // the launch's first item
        q.push(78, magic_payload(plain));
      } else {
        q.push(75, magic_payload(plain));
        q.push(76, magic_payload(plain));
        q.push(77, magic_payload(c.magic));
        q.push(78, magic_payload(plain));
      }
      const std::size_t size = q.size();
      REQUIRE_VGPU_ERROR(invalid_argument, c.fragment, pipeline.run(q));
      CHECK(q.size() == size);
      CHECK(q.id(q.size() - 1) == 78);
      still_works();
    }
    // A queue that is full, or a duplicate id: the push fails, the queue is unchanged and runs.
    PersistentQueue small(3);
    for (std::uint64_t i = 0; i < 3; ++i) small.push_value(i, std::uint32_t{9});
    REQUIRE_VGPU_ERROR(invalid_argument, "shard work into multiple queues", small.push_value(3, std::uint32_t{9}));
    REQUIRE_VGPU_ERROR(invalid_argument, "item id 501 is already in the queue", good.push_value(501, std::uint32_t{1}));
    REQUIRE_VGPU_ERROR(invalid_argument, "kMaxItems", PersistentQueue(PersistentQueue::kMaxItems + 1));
    CHECK(small.size() == 3);
    check_probe(pipeline.run(small), small);
    still_works();
  }
}

TEST_CASE("queue: a kernel that breaks the queue ABI is refused when the pipeline is made", "[queue]") {
  for (vgpu::Device device : queue_devices()) {
    INFO("device " << device.info().id());
    vgpu::KernelSource three = queue_probe_kernel();
    three.name = "test.queue_three_bindings";
    three.bindings.push_back(vgpu::BindingDecl{2, vgpu::Access::write, "extra", {}});
    if (device.info().backend == vgpu::BackendKind::vulkan || device.info().backend == vgpu::BackendKind::opengl) {
      // The GLSL form must declare what the kernel is declared with: add the third buffer.
      three.add_glsl("layout(std430, binding = 2) writeonly buffer Extra { uint extra[]; };\n" + kProbeGlsl);
    }
    REQUIRE_VGPU_ERROR(invalid_argument, "does not follow the queue ABI", QueuePipeline(device, three));
    if (!is_glsl_device(device)) {  // GLSL devices reflect their bindings: the text decides, tested above
      vgpu::KernelSource wrong_access = queue_probe_kernel();
      wrong_access.name = "test.queue_write_only_out";
      wrong_access.bindings[1].access = vgpu::Access::write;
      REQUIRE_VGPU_ERROR(invalid_argument, "docs/queue.md", QueuePipeline(device, wrong_access));
      vgpu::KernelSource no_decls = queue_probe_kernel();
      no_decls.name = "test.queue_no_declarations";
      no_decls.bindings.clear();
      no_decls.params_size = 0;
      REQUIRE_VGPU_ERROR(invalid_argument, "no bindings", QueuePipeline(device, no_decls));
    }
    vgpu::KernelSource wrong_params = queue_probe_kernel();
    wrong_params.name = "test.queue_wrong_params";
    wrong_params.params_size = 16;
    if (is_glsl_device(device))
      wrong_params.add_glsl(
          std::string(kProbeGlsl)
              .replace(kProbeGlsl.find("uint item_count;"), 16, "uint item_count; uint pad0; uint pad1;"));
    REQUIRE_VGPU_ERROR(invalid_argument, "params block of 16 bytes", QueuePipeline(device, wrong_params));
    // The device and a right pipeline still work after the refusals.
    std::vector<std::uint32_t> values;
    const PersistentQueue q = u32_queue(17, 17, values);
    check_add_one(QueuePipeline(device, vgpu::queue_add_one_kernel()).run(q), q, values);
  }
}

TEST_CASE("queue: 1 000 runs of the same or smaller size allocate, compile and bind nothing", "[queue]") {
  for (vgpu::Device device : queue_devices()) {
    INFO("device " << device.info().id());
    QueuePipeline pipeline(device, vgpu::queue_add_one_kernel());
    std::vector<std::uint32_t> values;
    const PersistentQueue big = u32_queue(64, 64, values);
    check_add_one(pipeline.run(big), big, values);
    const auto before = device.counters();
    std::mt19937 rng(1000);
    std::size_t wrong = 0;
    for (int run = 0; run < 1000; ++run) {
      std::vector<std::uint32_t> v;
      const PersistentQueue q = u32_queue(1 + rng() % 64, static_cast<std::uint32_t>(run), v);
      const QueueReport r = pipeline.run(q);
      for (std::size_t i = 0; i < q.size(); ++i) wrong += r.results.at(i).as<std::uint32_t>() != v[i] + 1;
    }
    const auto d = device.counters() - before;
    CHECK(wrong == 0);
    CHECK(d.allocations == 0);
    CHECK(d.compiles == 0);
    CHECK(d.source_compiles == 0);
    CHECK(d.binds == 0);
    CHECK(d.dispatches == 1000);
    CHECK(pipeline.runs() == 1001);
    // Larger queues grow the buffers geometrically: 31 ever larger queues (3 000 to 12 000
    // items) reallocate each of the two buffers only a few times.
    const auto b2 = device.counters();
    for (std::size_t n = 3000; n <= 12000; n += 300) {
      const PersistentQueue q = u32_queue(n, static_cast<std::uint32_t>(n), values);
      check_add_one(pipeline.run(q), q, values);
    }
    const auto grow = device.counters() - b2;
    CHECK(grow.allocations >= 2);
    CHECK(grow.allocations <= 8);
    CHECK(grow.binds >= 1);
    CHECK(grow.binds <= grow.allocations);  // one binding set per growth, which allocates one or two buffers
  }
}

TEST_CASE("queue: add-one over payloads past a driver's loop limit, every word checked", "[queue][loops]") {
  // Mesa's llvmpipe and lavapipe stop an invocation's loops after 65 535 iterations
  // (DeviceLimits::max_loop_iterations): one invocation cannot walk a payload longer than that.
  // An item of 2·65 536 + 5 words among short ones, and one just under the limit.
  const PersistentQueue q = word_queue({3, 2 * 65536 + 5, 1, 65534, 17}, 29);
  for (vgpu::Device device : queue_devices()) {
    INFO("device " << device.info().id() << " (max_loop_iterations " << device.info().limits.max_loop_iterations
                   << ")");
    std::vector<vgpu::KernelSource> kernels{vgpu::queue_add_one_kernel()};
    if (is_glsl_device(device)) kernels.push_back(vgpu::queue_add_one_shader_kernel());
    for (const auto& kernel : kernels) {
      INFO("kernel " << kernel.name);
      QueuePipeline pipeline(device, kernel);
      check_add_one_words(pipeline.run(q), q);
    }
  }
}

TEST_CASE("queue: QueueConfig::lanes splits each item over that many lanes, in every form of add-one",
          "[queue][loops]") {
  // Lanes are what long payloads get on devices that cut loops short; forced here, every
  // device runs each form's lane code (GLSL body and shader, CUDA C, the CPU callable) at
  // sizes that do not divide evenly: empty, shorter than the lanes, ragged, and long.
  const PersistentQueue q = byte_queue({0, 4, 8, 12, 13, 4000, 30, 4 * 1001 + 3}, 31);
  for (vgpu::Device device : queue_devices()) {
    INFO("device " << device.info().id());
    std::vector<vgpu::KernelSource> kernels{vgpu::queue_add_one_kernel()};
    if (is_glsl_device(device)) kernels.push_back(vgpu::queue_add_one_shader_kernel());
    for (const auto& kernel : kernels)
      for (std::uint32_t lanes : {1u, 3u, 7u}) {
        INFO("kernel " << kernel.name << ", " << lanes << " lanes");
        QueueConfig c;
        c.lanes = lanes;
        QueuePipeline pipeline(device, kernel, c);
        const QueueReport r = pipeline.run(q);
        CHECK(r.kernel_launches == 1);
        check_add_one_words(r, q);
      }
  }
}

TEST_CASE("queue: a kernel that ignores lanes fails loudly when given several", "[queue][loops]") {
  // The probe kernel walks its whole item in one invocation and emits from each: with lanes,
  // every item emits once per lane, which the run reports, naming the lanes and the Fix.
  vgpu::PersistentQueue q;
  for (std::uint32_t i = 0; i < 5; ++i) q.push(i, std::vector<std::byte>(4 + 8 * i, std::byte{7}));
  for (vgpu::Device device : queue_devices()) {
    INFO("device " << device.info().id());
    QueueConfig c = probe_config();
    c.lanes = 2;
    QueuePipeline pipeline(device, queue_probe_kernel(), c);
    REQUIRE_VGPU_ERROR(invalid_argument, "2 lanes", pipeline.run(q));
    REQUIRE_VGPU_ERROR(invalid_argument, "QueueConfig::lanes = 1", pipeline.run(q));
    c.lanes = 1;
    check_probe(QueuePipeline(device, queue_probe_kernel(), c).run(q), q);
    // More lanes than the device launches along y is refused before anything runs.
    c.lanes = device.info().limits.max_workgroup_count[1] + 1;
    if (c.lanes != 0) {
      QueuePipeline add_one(device, vgpu::queue_add_one_kernel(), c);
      REQUIRE_VGPU_ERROR(invalid_argument, "QueueConfig::lanes", add_one.run(q));
    }
  }
}

}  // namespace vgpu_test
