// SPDX-License-Identifier: Apache-2.0
// tests/runtime/persistent_lru_test.cpp — the live persistent kernels of a KernelDatabase, a Cache, a
// ShardedDatabase and vgpu::run's queue pipelines are bounded (issue 29, item 6): fed 300
// distinct shapes, each keeps at most its bound of kernels (count, and bytes of their buffers),
// counts the evictions, frees the device memory of the others (the device's allocated_bytes -
// freed_bytes), results stay right, a steady loop over a few shapes evicts nothing, getting an
// evicted shape again allocates and binds but compiles nothing (L1), and a kernel another holder
// still uses outlives its eviction. Plus LruMap itself and the bounds' configuration.
#include "support/catch.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "support/expect_error.hpp"
#include "support/multi_device.hpp"
#include "support/scoped_env.hpp"
#include "vgpu/lru_map.hpp"
#include "vgpu/vgpu.hpp"

namespace vgpu_test {
namespace {

/// The default bound on live persistent kernels per cache (docs/embedding.md).
constexpr std::size_t kDefaultCount = 64;

/// A runtime over the CPU only, memory-only cache, calibrating in the foreground.
vgpu::RuntimeOptions cpu_only() { return cpu_options(1); }

/// The same with bounds on live persistent kernels.
vgpu::RuntimeOptions cpu_bounded(std::size_t count, std::uint64_t bytes) {
  vgpu::RuntimeOptions o = cpu_options(1);
  o.persistent_capacity = count;
  o.persistent_max_bytes = bytes;
  return o;
}

/// Bytes of the matmul kernel of (m, k, n): A, B and C in float32.
std::uint64_t matmul_bytes(std::uint64_t m, std::uint64_t k, std::uint64_t n) { return 4 * (m * k + k * n + m * n); }

/// Deterministic inputs of an m×k · k×n product and its reference, computed on the host.
struct Product {
  std::uint32_t m, k, n;
  std::vector<float> a, b, c;
  Product(std::uint32_t m_, std::uint32_t k_, std::uint32_t n_) : m(m_), k(k_), n(n_), a(m * k), b(k * n), c(m * n) {
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = float((i * 7 + m) % 13) - 6.0f;
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = float((i * 5 + n) % 11) - 5.0f;
    for (std::uint32_t r = 0; r < m; ++r)
      for (std::uint32_t j = 0; j < n; ++j) {
        float s = 0;
        for (std::uint32_t x = 0; x < k; ++x) s += a[r * k + x] * b[x * n + j];
        c[r * n + j] = s;
      }
  }
  /// The three tensors of the matmul op, writing into out.
  std::vector<vgpu::TensorArg> args(std::vector<float>& out) const {
    out.assign(std::size_t{m} * n, -1.0f);
    return {vgpu::TensorArg(a.data(), {m, k}), vgpu::TensorArg(b.data(), {k, n}), vgpu::TensorArg(out.data(), {m, n})};
  }
  /// Whether out equals the reference (small integers: exact in float32).
  bool right(const std::vector<float>& out) const { return out == c; }
};

/// Runs matmul at (m, k, n) through db and checks the result.
void run_checked(vgpu::KernelDatabase& db, std::uint32_t m, std::uint32_t k, std::uint32_t n) {
  const Product p(m, k, n);
  std::vector<float> out;
  db.call("matmul", {m, k, n}, p.args(out));
  INFO("matmul " << m << "x" << k << "x" << n);
  REQUIRE(p.right(out));
}

/// Device memory alive on device now, after letting finished work's buffers be freed.
std::uint64_t live_bytes(vgpu::Device& device) {
  device.synchronize();  // a call: frees what was retired and has completed
  return device.counters().live_bytes();
}

}  // namespace

TEST_CASE("KernelDatabase fed 300 distinct shapes keeps its bound of live kernels and frees the rest",
          "[persistent_lru][db]") {
  vgpu::Runtime rt(cpu_only());
  vgpu::Device device = rt.open("cpu:0");
  vgpu::KernelDatabase db(device);
  for (std::uint32_t i = 0; i < 300; ++i) run_checked(db, 1 + i, 8, 8);
  CHECK(db.misses() == 300);
  CHECK(db.size() == kDefaultCount);
  CHECK(db.limits().count == kDefaultCount);
  CHECK(db.limits().bytes == vgpu::PersistentLimits::kDefaultBytes);
  CHECK(db.evictions() == 300 - kDefaultCount);
  CHECK(device.counters().persistent_evictions == 300 - kDefaultCount);
  CHECK(db.report() == "KernelDB: 0 hits, 300 compiles, 236 evictions");
  // The kernels of the 64 last shapes (m = 237..300) hold A, B and C each — on a device that
  // stages them; the CPU device runs the kernels on the callers' memory and holds none.
  const bool in_place = vgpu::Array::uses_host_memory(device);
  std::uint64_t held = 0;
  for (std::uint32_t m = 237; m <= 300; ++m) held += in_place ? 0 : matmul_bytes(m, 8, 8);
  CHECK(db.buffer_bytes() == held);
  CHECK(live_bytes(device) == held);  // the evicted kernels' buffers are freed

  // A steady loop over a few recent shapes builds, allocates and evicts nothing.
  const vgpu::CounterSnapshot before = device.counters();
  for (int round = 0; round < 20; ++round)
    for (std::uint32_t m : {300u, 280u, 250u}) run_checked(db, m, 8, 8);
  const vgpu::CounterSnapshot steady = device.counters() - before;
  CHECK(db.misses() == 300);
  CHECK(db.hits() == 60);
  CHECK(steady.allocations == 0);
  CHECK(steady.compiles == 0);
  CHECK(steady.persistent_evictions == 0);
  CHECK(db.evictions() == 300 - kDefaultCount);
  CHECK(db.size() == kDefaultCount);

  // An evicted shape comes back with buffers and bindings, its program from L1: no compile.
  const vgpu::CounterSnapshot again = device.counters();
  run_checked(db, 1, 8, 8);
  const vgpu::CounterSnapshot back = device.counters() - again;
  CHECK(db.misses() == 301);
  CHECK(back.compiles == 0);
  CHECK(back.l1_hits == 1);
  CHECK(back.allocations == (in_place ? 0u : 3u));
  CHECK(back.binds == (in_place ? 2u : 1u));  // the plan's binding checked; in place, the call's memory bound
  CHECK(back.persistent_evictions == 1);      // the least recently used one made room
}

TEST_CASE("KernelDatabase on the software GPUs: evicted kernels free their memory, come back without a compile",
          "[persistent_lru][db][gpu]") {
  vgpu::RuntimeOptions o;
  o.allowed = {vgpu::BackendKind::vulkan, vgpu::BackendKind::opengl};
  o.cache_enabled = false;
  o.background = false;
  o.persistent_capacity = 4;
  vgpu::Runtime rt(o);
  const std::vector<vgpu::DeviceInfo> gpus = rt.devices();
  if (gpus.empty()) {
    WARN("skipped: no Vulkan or OpenGL device here (lavapipe/llvmpipe)");
    return;
  }
  for (const vgpu::DeviceInfo& info : gpus) {
    INFO(info.id());
    vgpu::Device device = rt.open(info);
    vgpu::KernelDatabase db(device);
    for (std::uint32_t m = 1; m <= 12; ++m) run_checked(db, m, 16, 16);
    CHECK(db.size() == 4);
    CHECK(db.evictions() == 8);
    CHECK(device.counters().persistent_evictions == 8);
    std::uint64_t held = 0;
    for (std::uint32_t m = 9; m <= 12; ++m) held += matmul_bytes(m, 16, 16);
    CHECK(db.buffer_bytes() == held);
    CHECK(live_bytes(device) == held);
    // m = 1 was evicted: it comes back with new buffers and bindings; its program is in L1.
    const vgpu::CounterSnapshot before = device.counters();
    run_checked(db, 1, 16, 16);
    const vgpu::CounterSnapshot back = device.counters() - before;
    CHECK(back.compiles == 0);
    CHECK(back.source_compiles == 0);
    CHECK(back.l1_hits >= 1);
    CHECK(back.allocations >= 3);
    CHECK(back.binds >= 1);
    CHECK(db.misses() == 13);
    CHECK(live_bytes(device) == db.buffer_bytes());
  }
}

TEST_CASE("KernelDatabase: the bytes bound keeps the most recent kernels that fit, one larger alone",
          "[persistent_lru][db][gpu]") {
  // The bound is on device memory the kernels hold: the software GPUs stage every tensor in
  // buffers of the kernel's own (the CPU device holds none: the next case).
  vgpu::RuntimeOptions o = cpu_bounded(1000, 100 * 1024);
  o.allowed = {vgpu::BackendKind::vulkan, vgpu::BackendKind::opengl};
  vgpu::Runtime rt(o);
  if (rt.devices().empty()) {
    WARN("skipped: no Vulkan or OpenGL device here (lavapipe/llvmpipe)");
    return;
  }
  vgpu::Device device = rt.open(rt.devices().front());
  INFO(device.info().id());
  vgpu::KernelDatabase db(device);
  CHECK(db.limits().count == 1000);
  CHECK(db.limits().bytes == 100 * 1024);
  // Every other call is the 64×64×64 matmul (48 KiB), the rest 150 new small shapes (< 10 KiB):
  // the big one, always among the two most recent, stays; the small ones go oldest first.
  for (std::uint32_t i = 0; i < 300; ++i) {
    if (i % 2 == 1)
      run_checked(db, 64, 64, 64);
    else
      run_checked(db, 1 + i / 2, 8, 8);
    REQUIRE(db.buffer_bytes() <= 100 * 1024);
  }
  CHECK(db.hits() == 149);
  CHECK(db.misses() == 151);
  CHECK(db.evictions() == db.misses() - db.size());
  CHECK(db.size() >= 2);
  CHECK(db.size() < 10);  // 4·(16m + 64) bytes each: only the last few small ones fit
  CHECK(live_bytes(device) == db.buffer_bytes());

  // A kernel larger than the bound on its own is still kept (alone), so a loop on it is steady.
  run_checked(db, 128, 128, 128);  // 192 KiB
  CHECK(db.size() == 1);
  CHECK(db.buffer_bytes() == matmul_bytes(128, 128, 128));
  const vgpu::CounterSnapshot before = device.counters();
  for (int i = 0; i < 5; ++i) run_checked(db, 128, 128, 128);
  CHECK((device.counters() - before).allocations == 0);
  CHECK(live_bytes(device) == matmul_bytes(128, 128, 128));

  // set_limits shrinks at once (evicting) and refuses nonsense with a Fix.
  run_checked(db, 8, 8, 8);
  CHECK(db.size() == 1);  // 128³ is over the bound beside it
  db.set_limits({1, 1 << 20});
  run_checked(db, 64, 64, 64);
  run_checked(db, 9, 8, 8);
  CHECK(db.size() == 1);
  REQUIRE_VGPU_ERROR(invalid_argument, "count 0", db.set_limits({0, 1 << 20}));
  REQUIRE_VGPU_ERROR(invalid_argument, "bytes 0", db.set_limits({4, 0}));
  CHECK(db.limits().count == 1);
}

TEST_CASE("KernelDatabase on the CPU: in-place kernels hold no buffers, so only the count bound evicts them",
          "[persistent_lru][db]") {
  vgpu::Runtime rt(cpu_bounded(100, 1024));  // a byte bound no staged matmul below fits
  vgpu::Device device = rt.open("cpu:0");
  REQUIRE(vgpu::Array::uses_host_memory(device));
  vgpu::KernelDatabase db(device);
  for (std::uint32_t i = 0; i < 150; ++i) run_checked(db, 1 + i, 64, 64);
  CHECK(db.buffer_bytes() == 0);
  CHECK(db.size() == 100);  // the count bound
  CHECK(db.evictions() == 50);
  CHECK(live_bytes(device) == 0);
  // A plan with scratch tensors (reduce_sum's partial sums) holds those, and the byte bound counts them.
  std::vector<float> x(1u << 16, 1.0f), sum(1, -1.0f);
  const vgpu::TensorArg args[] = {vgpu::TensorArg(x.data(), {x.size()}), vgpu::TensorArg(sum.data(), {1})};
  db.call("reduce_sum", {x.size()}, args);
  CHECK(sum[0] == float(x.size()));
  CHECK(db.buffer_bytes() > 0);
  CHECK(live_bytes(device) == db.buffer_bytes());
}

TEST_CASE("KernelDatabase: an evicted kernel still held elsewhere stays usable, its memory goes with it",
          "[persistent_lru][db]") {
  vgpu::Runtime rt(cpu_bounded(2, vgpu::PersistentLimits::kDefaultBytes));
  vgpu::Device device = rt.open("cpu:0");
  vgpu::KernelDatabase db(device);
  std::shared_ptr<vgpu::PersistentKernel> held = db.get("matmul", {32, 8, 8});
  for (std::uint32_t m = 1; m <= 4; ++m) run_checked(db, m, 8, 8);  // evicts (32, 8, 8)
  CHECK(db.size() == 2);
  CHECK(db.evictions() == 3);
  // The database let it go; this holder did not: it runs, and its buffers are still allocated.
  const Product p(32, 8, 8);
  std::vector<float> out;
  (*held)(p.args(out));
  CHECK(p.right(out));
  CHECK(live_bytes(device) == db.buffer_bytes() + held->buffer_bytes());
  held.reset();
  CHECK(live_bytes(device) == db.buffer_bytes());
  // The database builds it again when asked: a new kernel.
  run_checked(db, 32, 8, 8);
  CHECK(db.misses() == 6);
}

TEST_CASE("Cache fed 300 distinct shapes keeps its bound of live kernels and frees the rest",
          "[persistent_lru][cache]") {
  vgpu::Runtime rt(cpu_only());
  vgpu::Device device = rt.open("cpu:0");
  vgpu::Cache cache(device);
  for (std::uint32_t i = 0; i < 300; ++i) {
    const Product p(16 + i, 16, 8);
    vgpu::Matrix a(p.m, p.k), b(p.k, p.n);
    a.data = p.a;
    b.data = p.b;
    REQUIRE(cache.matmul(a, b).data == p.c);
  }
  CHECK(cache.compiles() == 300);
  CHECK(cache.size() == kDefaultCount);
  CHECK(cache.evictions() == 300 - kDefaultCount);
  CHECK(cache.report() == "VGPUCache: 300 compiles, 0 cache hits, 300 dispatches, 236 evictions");
  CHECK(live_bytes(device) == cache.buffer_bytes());
  std::uint64_t held = 0;  // the CPU device holds none: its kernels run on the matrices' memory
  if (!vgpu::Array::uses_host_memory(device))
    for (std::uint32_t m = 16 + 236; m < 16 + 300; ++m) held += matmul_bytes(m, 16, 8);
  CHECK(cache.buffer_bytes() == held);
}

TEST_CASE("Cache: a steady loop over a few shapes keeps the seed's report", "[persistent_lru][cache]") {
  vgpu::Runtime rt(cpu_only());
  vgpu::Cache cache(rt.open("cpu:0"));
  vgpu::Matrix a(8, 8, 1.0f), b(8, 8, 2.0f), c(9, 8, 1.0f);
  for (int i = 0; i < 50; ++i) {
    REQUIRE(cache.matmul(a, b).data == std::vector<float>(64, 16.0f));
    REQUIRE(cache.matmul(c, b).data == std::vector<float>(72, 16.0f));
  }
  CHECK(cache.evictions() == 0);
  CHECK(cache.report() == "VGPUCache: 2 compiles, 98 cache hits, 100 dispatches");
}

TEST_CASE("ShardedDatabase fed 300 distinct shapes keeps each device's bound of live kernels",
          "[persistent_lru][sharded]") {
  MultiSetup s(2);
  vgpu::ShardedDatabase db(s.set);
  for (std::uint32_t i = 0; i < 300; ++i) {
    const Product p(1 + i, 4, 4);
    std::vector<float> out;
    db.call("matmul", {p.m, 4, 4}, p.args(out));
    REQUIRE(p.right(out));
  }
  // Every call of one shape runs on the set's fastest device; their kernels are bounded.
  std::size_t held = 0;
  for (std::size_t d = 0; d < s.set.size(); ++d) {
    vgpu::Device device = s.set.open(d);
    CHECK(db.database(d).size() <= kDefaultCount);
    CHECK(live_bytes(device) == db.database(d).buffer_bytes());
    held += db.database(d).size();
  }
  CHECK(held <= 2 * kDefaultCount);
  CHECK(db.misses() == 300);
  CHECK(db.evictions() == 300 - held);
  CHECK(db.report().find(", " + std::to_string(300 - held) + " evictions") != std::string::npos);
}

TEST_CASE("ShardedDatabase: each device's database takes its runtime's bounds", "[persistent_lru][sharded]") {
  vgpu::RuntimeOptions o = cpu_options(2);
  o.persistent_capacity = 3;
  vgpu::Runtime rt(o);
  vgpu::ShardedDatabase db(vgpu::DeviceSet::all(rt));
  for (std::size_t d = 0; d < 2; ++d) CHECK(db.database(d).limits().count == 3);
  // A batch spread over both devices, at 10 shapes: each device keeps its 3 latest.
  for (std::uint32_t m = 1; m <= 10; ++m) {
    const Product p(m, 4, 4);
    std::vector<std::vector<float>> outs(8);
    db.call_batch("matmul", {m, 4, 4}, 8, [&](std::uint32_t i) { return p.args(outs[i]); });
    for (const auto& out : outs) REQUIRE(p.right(out));
  }
  for (std::size_t d = 0; d < 2; ++d) {
    CHECK(db.database(d).size() <= 3);
    vgpu::Device device = rt.open("cpu:" + std::to_string(d));
    CHECK(live_bytes(device) == db.database(d).buffer_bytes());
  }
  CHECK(db.evictions() == db.misses() - db.database(0).size() - db.database(1).size());
  CHECK(db.evictions() > 0);
}

namespace {

/// A queue of count items, each a 4-byte-aligned payload of bytes bytes.
vgpu::PersistentQueue queue_of(std::size_t count, std::size_t bytes) {
  vgpu::PersistentQueue q;
  std::vector<std::byte> payload(bytes, std::byte{7});
  for (std::size_t i = 0; i < count; ++i) q.push(i, payload);
  return q;
}

/// Runs q through vgpu::run with output_bytes out on device and checks the add-one results
/// (every payload word 0x07070707 comes back plus one, as many whole words as out allows).
void run_queue_checked(const vgpu::Device& device, const vgpu::PersistentQueue& q, std::uint32_t out) {
  vgpu::QueueConfig config;
  config.output_bytes = out;
  const vgpu::QueueReport r = vgpu::run(device, vgpu::queue_add_one_kernel(), config, q);
  REQUIRE(r.results.size() == q.size());
  for (std::size_t i = 0; i < q.size(); ++i) {
    const auto got = r.results[i].payload;
    REQUIRE(r.results[i].id == q.id(i));
    REQUIRE(got.size() == std::min<std::size_t>(out, q.payload(i).size()) / 4 * 4);
    for (std::size_t b = 0; b < got.size(); ++b) REQUIRE(got[b] == std::byte(b % 4 == 0 ? 8 : 7));
  }
}

}  // namespace

TEST_CASE("vgpu::run keeps its device's bound of queue pipelines, by count and by bytes", "[persistent_lru][queue]") {
  SECTION("count") {
    vgpu::Runtime rt(cpu_bounded(4, vgpu::PersistentLimits::kDefaultBytes));
    vgpu::Device device = rt.open("cpu:0");
    const vgpu::PersistentQueue q = queue_of(16, 64);
    // Each output_bytes is a pipeline of its own (the config is part of its key).
    for (std::uint32_t out = 4; out <= 40; out += 4) run_queue_checked(device, q, out);
    CHECK(device.counters().persistent_evictions == 10 - 4);
    const std::uint64_t held = live_bytes(device);
    // A steady loop over the 3 latest builds, allocates and evicts nothing.
    const vgpu::CounterSnapshot before = device.counters();
    for (int i = 0; i < 10; ++i)
      for (std::uint32_t out : {40u, 36u, 32u}) run_queue_checked(device, q, out);
    const vgpu::CounterSnapshot steady = device.counters() - before;
    CHECK(steady.compiles == 0);
    CHECK(steady.allocations == 0);
    CHECK(steady.persistent_evictions == 0);
    CHECK(live_bytes(device) == held);
  }
  SECTION("bytes") {
    // A queue of 4096 items of 64 bytes grows each pipeline's buffers (entries and payloads in,
    // result table and outputs out) to between 2/3 and 1 MiB: a 2 MiB bound holds two pipelines.
    vgpu::Runtime rt(cpu_bounded(1000, 2 << 20));
    vgpu::Device device = rt.open("cpu:0");
    const vgpu::PersistentQueue q = queue_of(4096, 64);
    run_queue_checked(device, q, 64);
    const std::uint64_t one = live_bytes(device);
    REQUIRE(2 * one <= (2 << 20));  // two pipelines fit,
    REQUIRE(3 * one > (2 << 20));   // three do not
    for (std::uint32_t out = 68; out < 68 + 4 * 8; out += 4) {
      run_queue_checked(device, q, out);
      CHECK(live_bytes(device) <= 2 << 20);
    }
    CHECK(device.counters().persistent_evictions == 9 - 2);
  }
}

TEST_CASE("LruMap evicts the least recently used past its count or bytes, never the newest", "[persistent_lru][lru]") {
  vgpu::LruMap<int, std::shared_ptr<int>> m({3, 100});
  auto put = [&](int k, std::uint64_t bytes) { return m.put(k, std::make_shared<int>(k), bytes).size(); };
  CHECK(put(1, 10) == 0);
  CHECK(put(2, 10) == 0);
  CHECK(put(3, 10) == 0);
  REQUIRE(m.find(1) != nullptr);  // 1 is now the most recent: 2 is the oldest
  CHECK(put(4, 10) == 1);         // evicts 2
  CHECK(m.peek(2) == nullptr);
  CHECK(m.size() == 3);
  CHECK(m.bytes() == 30);
  CHECK(m.evictions() == 1);
  // A fourth entry pushes out the oldest (3); then 100 bytes is exactly the bound: kept.
  CHECK(put(5, 80) == 1);
  CHECK(m.peek(3) == nullptr);
  CHECK(m.size() == 3);
  CHECK(m.bytes() == 100);
  CHECK(m.peek(4) != nullptr);
  // One entry over the bound on its own pushes out all the others and stays, alone.
  CHECK(put(6, 500) == 3);
  CHECK(m.size() == 1);
  CHECK(m.bytes() == 500);
  // A value still shared elsewhere outlives its eviction.
  std::shared_ptr<int> kept = *m.find(6);
  CHECK(put(7, 1) == 1);
  CHECK(*kept == 6);
  // resize grows an entry in place and evicts the others past the bound; take and erase_if do
  // not count as evictions; replacing a key hands the old value back.
  CHECK(put(8, 1) == 0);
  CHECK(m.resize(8, 100).size() == 1);
  CHECK(m.bytes() == 100);
  const std::uint64_t evicted = m.evictions();
  CHECK(m.put(8, std::make_shared<int>(80), 5).size() == 1);
  CHECK(**m.peek(8) == 80);
  CHECK(m.take(8).has_value());
  CHECK(m.empty());
  CHECK(m.bytes() == 0);
  CHECK(m.evictions() == evicted);
  CHECK(m.set_limits({0, 0}).empty());  // clamped to 1 and 1
  CHECK(m.limits().count == 1);
}

TEST_CASE("Persistent bounds: RuntimeOptions over VGPU_PERSISTENT_*, defaults, bad values",
          "[persistent_lru][config]") {
  {
    const vgpu::Config c = vgpu::Config::from_env();
    CHECK(c.persistent_capacity == 64);
    CHECK(c.persistent_max_bytes == (std::uint64_t{1} << 30));
  }
  ScopedEnv count("VGPU_PERSISTENT_CAPACITY", "5"), bytes("VGPU_PERSISTENT_MAX_BYTES", "3M");
  vgpu::Runtime from_env(cpu_only());
  CHECK(from_env.config().persistent_capacity == 5);
  CHECK(from_env.config().persistent_max_bytes == (3u << 20));
  CHECK(vgpu::KernelDatabase(from_env.open("cpu:0")).limits().count == 5);
  CHECK(vgpu::KernelDatabase(from_env).limits().bytes == (3u << 20));
  vgpu::Runtime overridden(cpu_bounded(7, 4096));
  CHECK(overridden.config().persistent_capacity == 7);
  CHECK(vgpu::KernelDatabase(overridden.open("cpu:0")).limits().bytes == 4096);
  REQUIRE_VGPU_ERROR(invalid_argument, "persistent_capacity is 0", vgpu::Runtime{cpu_bounded(0, 4096)});
  REQUIRE_VGPU_ERROR(invalid_argument, "persistent_max_bytes is 0", vgpu::Runtime{cpu_bounded(4, 0)});
}

}  // namespace vgpu_test
