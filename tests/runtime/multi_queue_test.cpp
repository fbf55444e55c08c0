// SPDX-License-Identifier: Apache-2.0
// tests/runtime/multi_queue_test.cpp — issue 18's shared spread engine beyond Cache: ShardedDatabase
// (call, call_batch of built-in and user ops over a set) and QueuePipelineSet (one queue drained
// over a set: results as on one device, in queue order; a failed device's range rerun; shares
// following measured speed).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "support/catch.hpp"
#include "support/expect_error.hpp"
#include "support/multi_device.hpp"
#include "support/numerics.hpp"
#include "support/test_backend.hpp"
#include "vgpu/vgpu.hpp"

using vgpu_test::compare;
using vgpu_test::MultiSetup;
using vgpu_test::random_floats;

namespace {

// A queue of count items with ids 1000 + 7·i and payloads of mixed lengths (0, 1, 4, 5, 37, 64
// bytes, ...), seeded by the position.
vgpu::PersistentQueue mixed_queue(std::size_t count) {
  vgpu::PersistentQueue q;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t len = (i * 37) % 70;  // includes 0 and lengths not a multiple of 4
    std::vector<std::byte> p(len);
    for (std::size_t b = 0; b < len; ++b) p[b] = std::byte(static_cast<unsigned char>(i * 31 + b * 7));
    q.push(1000 + 7 * i, p);
  }
  return q;
}

// What the add-one kernel writes for item i: its payload's whole u32 words, each plus 1.
std::vector<std::byte> add_one_expected(const vgpu::PersistentQueue& q, std::size_t i) {
  const auto p = q.payload(i);
  std::vector<std::byte> out(p.size() / 4 * 4);
  for (std::size_t w = 0; w < p.size() / 4; ++w) {
    std::uint32_t v;
    std::memcpy(&v, p.data() + 4 * w, 4);
    ++v;
    std::memcpy(out.data() + 4 * w, &v, 4);
  }
  return out;
}

// Checks that report holds queue's results in queue order, equal to one-device report one.
void check_report(const vgpu::PersistentQueue& q, const vgpu::QueueReport& got, const vgpu::QueueReport& one) {
  REQUIRE(got.results.size() == q.size());
  REQUIRE(one.results.size() == q.size());
  for (std::size_t i = 0; i < q.size(); ++i) {
    INFO("item " << i);
    REQUIRE(got.results[i].id == q.id(i));
    const auto expected = add_one_expected(q, i);
    REQUIRE(got.results[i].payload.size() == expected.size());
    // std::equal, not memcmp: an empty payload's data() may be null, which memcmp must not get.
    CHECK(std::equal(expected.begin(), expected.end(), got.results[i].payload.begin()));
    REQUIRE(one.results[i].payload.size() == expected.size());
    CHECK(std::equal(one.results[i].payload.begin(), one.results[i].payload.end(), got.results[i].payload.begin()));
  }
}

std::uint64_t sum(const std::vector<std::uint32_t>& v) {
  std::uint64_t s = 0;
  for (auto x : v) s += x;
  return s;
}

}  // namespace

TEST_CASE("A queue drained over 4 CPU devices equals one device, in queue order", "[multi_device]") {
  MultiSetup ms(4);
  vgpu::QueuePipelineSet qs(ms.set, vgpu::queue_add_one_kernel());
  vgpu::QueuePipeline one(ms.rt.open("cpu:0"), vgpu::queue_add_one_kernel());
  std::uint64_t runs = 0;
  for (std::size_t count : {1, 3, 17, 1000}) {
    INFO(count << " items");
    const vgpu::PersistentQueue q = mixed_queue(count);
    const vgpu::QueueReport got = qs.run(q);
    check_report(q, got, one.run(q));
    ++runs;
    const vgpu::MultiStats s = qs.stats();
    CHECK(s.batches == runs);
    CHECK(sum(s.last_shares) == count);
    CHECK(s.failures == 0);
    std::size_t used = 0;
    for (auto share : s.last_shares) used += share > 0;
    CHECK(got.round_trips == used);  // one round trip per device with a share
    CHECK(got.kernel_launches >= used);
  }
  CHECK(qs.run(vgpu::PersistentQueue{}).results.empty());
  // A copy of the report points into its own storage.
  const vgpu::PersistentQueue q = mixed_queue(17);
  const vgpu::QueueReport copy = qs.run(q);
  check_report(q, vgpu::QueueReport(copy), copy);
}

TEST_CASE("QueuePipeline runs a range of a queue without copying it", "[multi_device]") {
  MultiSetup ms(1);
  vgpu::QueuePipeline p(ms.rt.open("cpu:0"), vgpu::queue_add_one_kernel());
  const vgpu::PersistentQueue q = mixed_queue(17);
  const vgpu::QueueReport all = p.run(q);
  const vgpu::QueueReport mid = p.run(q, 5, 7);
  REQUIRE(mid.results.size() == 7);
  for (std::size_t j = 0; j < 7; ++j) {
    CHECK(mid.results[j].id == q.id(5 + j));
    REQUIRE(mid.results[j].payload.size() == all.results[5 + j].payload.size());
    CHECK(std::memcmp(mid.results[j].payload.data(), all.results[5 + j].payload.data(),
                      mid.results[j].payload.size()) == 0);
  }
  CHECK(p.run(q, 15, 100).results.size() == 2);  // clipped to the queue's end
  CHECK(p.run(q, 17, 1).results.empty());
}

TEST_CASE("A device failing mid-queue has its range rerun and is left out", "[multi_device]") {
  MultiSetup ms({0, 0, 0}, "multi-queue-fail");
  vgpu::QueuePipelineSet qs(ms.set, vgpu::queue_add_one_kernel());
  vgpu::QueuePipeline one(ms.rt.open("test:0"), vgpu::queue_add_one_kernel());
  const vgpu::PersistentQueue q = mixed_queue(1000);
  check_report(q, qs.run(q), one.run(q));
  REQUIRE(qs.stats().failures == 0);

  ms.knobs[1]->lose_next = 1000;  // test:1 is lost at every round trip, its recovery's retry too
  const vgpu::QueueReport got = qs.run(q);
  check_report(q, got, one.run(q));
  vgpu::MultiStats s = qs.stats();
  CHECK(s.failures == 1);
  CHECK(s.rerun_items == s.last_shares[1]);
  CHECK(s.rerun_items > 0);
  REQUIRE(s.last_failures.size() == 1);
  CHECK(s.last_failures[0].find("test:1") == 0);
  CHECK(qs.left_out() == std::vector<bool>{false, true, false});
  CHECK(qs.weights()[1] == 0.0);

  // Left out from then on.
  ms.knobs[1]->lose_next = 0;
  check_report(q, qs.run(q), one.run(q));
  s = qs.stats();
  CHECK(s.last_shares[1] == 0);
  CHECK(s.failures == 1);

  ms.knobs[0]->fail_dispatch = true;
  ms.knobs[2]->fail_dispatch = true;
  REQUIRE_VGPU_ERROR(unavailable, "every device of the set", (void)qs.run(q));
}

TEST_CASE("Queue shares move toward the faster device", "[multi_device]") {
  MultiSetup ms({0, 0}, "multi-queue-speed");
  // Simulated link costs (the test devices' clock, test_backend.hpp): 10 µs per KiB moved on
  // test:0, 200 µs on test:1, so the measured seconds per item are 20:1 whatever the machine's load.
  ms.knobs[0]->ns_per_kib = 10000;
  ms.knobs[1]->ns_per_kib = 200000;
  vgpu::QueuePipelineSet qs(ms.set, vgpu::queue_add_one_kernel());
  vgpu::PersistentQueue q;
  std::vector<std::uint32_t> words(64, 7);
  for (std::uint64_t i = 0; i < 400; ++i) q.push(i, std::as_bytes(std::span<const std::uint32_t>(words)));
  (void)qs.run(q);
  CHECK(qs.stats().last_shares == std::vector<std::uint32_t>{200, 200});  // first run: equal weights
  const auto spi = qs.seconds_per_item();
  INFO("seconds per item " << spi[0] << " / " << spi[1]);
  CHECK(spi[0] > 0);
  CHECK(spi[1] > spi[0]);
  CHECK(std::abs(spi[1] / spi[0] - 20) < 0.02);  // both shares moved the same bytes per item
  (void)qs.run(q);
  const vgpu::MultiStats s = qs.stats();
  INFO("shares " << s.last_shares[0] << "/" << s.last_shares[1]);
  // Weights 20:1 split the 400 items 381:19.
  CHECK(s.last_shares[0] > 250);
  CHECK(s.last_shares == std::vector<std::uint32_t>{381, 19});
  CHECK(s.last_shares[0] + s.last_shares[1] == 400);
  CHECK(s.items[0] + s.items[1] == 800);
}

TEST_CASE("A kernel a device cannot take leaves it out of the queue set", "[multi_device]") {
  MultiSetup ms({0, 0}, "multi-queue-compile");
  ms.knobs[0]->fail_compile = true;
  vgpu::QueuePipelineSet qs(ms.set, vgpu::queue_add_one_kernel());
  CHECK(qs.left_out() == std::vector<bool>{true, false});
  REQUIRE(qs.stats().last_failures.size() == 1);
  const vgpu::PersistentQueue q = mixed_queue(17);
  vgpu::QueuePipeline one(ms.rt.open("test:1"), vgpu::queue_add_one_kernel());
  check_report(q, qs.run(q), one.run(q));
  CHECK(qs.stats().last_shares == std::vector<std::uint32_t>{0, 17});
  // No device takes it: the compile error reaches the caller.
  MultiSetup none({0, 0}, "multi-queue-compile-none");
  for (auto& k : none.knobs) k->fail_compile = true;
  REQUIRE_VGPU_ERROR(compile_error, "", vgpu::QueuePipelineSet(none.set, vgpu::queue_add_one_kernel()));
}

TEST_CASE("A queue over the software GPUs (lavapipe, llvmpipe) and the CPU equals one device", "[multi_device]") {
  MultiSetup ms(MultiSetup::every_backend);
  const vgpu::DeviceSet& set = ms.set;
  if (set.size() < 2) {
    WARN("skipped: only " << set.size() << " device here (no lavapipe/llvmpipe)");
    return;
  }
  vgpu::QueuePipelineSet qs(set, vgpu::queue_add_one_kernel());
  vgpu::QueuePipeline one(set.open(0), vgpu::queue_add_one_kernel());
  for (std::size_t count : {1, 17, 1000}) {
    const vgpu::PersistentQueue q = mixed_queue(count);
    check_report(q, qs.run(q), one.run(q));
  }
}

TEST_CASE("ShardedDatabase::call_batch of add, matmul and softmax equals the reference", "[multi_device]") {
  MultiSetup ms(4);
  vgpu::ShardedDatabase db(ms.set);
  for (std::uint32_t count : {1u, 3u, 17u}) {
    INFO(count << " calls");
    {  // add {n}
      for (std::uint32_t n : {1u, 17u, 1000u}) {
        std::vector<std::vector<float>> a, b, out(count, std::vector<float>(n));
        for (std::uint32_t i = 0; i < count; ++i) {
          a.push_back(random_floats(n, 10 + i));
          b.push_back(random_floats(n, 50 + i));
        }
        db.call_batch("add", {n}, count, [&](std::uint32_t i) {
          return std::vector<vgpu::TensorArg>{vgpu::TensorArg(a[i].data(), {n}), vgpu::TensorArg(b[i].data(), {n}),
                                              vgpu::TensorArg(out[i].data(), {n})};
        });
        for (std::uint32_t i = 0; i < count; ++i) {
          const auto cmp = compare(out[i], vgpu_test::binary_reference(a[i], b[i], false));
          INFO("add n=" << n << " item " << i << ": " << cmp.describe());
          CHECK(cmp.ok());
        }
      }
    }
    {  // matmul {m, k, n}
      const std::uint32_t m = 17, k = 33, n = 9;
      std::vector<std::vector<float>> a, b, c(count, std::vector<float>(m * n));
      for (std::uint32_t i = 0; i < count; ++i) {
        a.push_back(random_floats(m * k, 70 + i));
        b.push_back(random_floats(k * n, 90 + i));
      }
      db.call_batch("matmul", {m, k, n}, count, [&](std::uint32_t i) {
        return std::vector<vgpu::TensorArg>{vgpu::TensorArg(a[i].data(), {m, k}), vgpu::TensorArg(b[i].data(), {k, n}),
                                            vgpu::TensorArg(c[i].data(), {m, n})};
      });
      for (std::uint32_t i = 0; i < count; ++i) {
        const auto cmp = compare(c[i], vgpu_test::matmul_reference(a[i], b[i], m, k, n));
        INFO("matmul item " << i << ": " << cmp.describe());
        CHECK(cmp.ok());
      }
    }
    {  // softmax_rows {rows, cols}
      const std::uint32_t rows = 17, cols = 33;
      std::vector<std::vector<float>> x, y(count, std::vector<float>(rows * cols));
      for (std::uint32_t i = 0; i < count; ++i) x.push_back(random_floats(rows * cols, 110 + i, -5.0f, 5.0f));
      db.call_batch("softmax_rows", {rows, cols}, count, [&](std::uint32_t i) {
        return std::vector<vgpu::TensorArg>{vgpu::TensorArg(x[i].data(), {rows, cols}),
                                            vgpu::TensorArg(y[i].data(), {rows, cols})};
      });
      for (std::uint32_t i = 0; i < count; ++i) {
        const auto cmp = compare(y[i], vgpu_test::softmax_reference(x[i], rows, cols));
        INFO("softmax item " << i << ": " << cmp.describe());
        CHECK(cmp.ok());
      }
    }
  }
  const vgpu::MultiStats s = db.stats();
  CHECK(s.batches == 3 * 5);
  CHECK(s.failures == 0);
  std::uint64_t items = 0;
  for (auto i : s.items) items += i;
  CHECK(items == (1 + 3 + 17) * 5);
  CHECK(db.misses() > 0);
  CHECK(db.hits() + db.misses() >= items);
  CHECK(db.report().find("ShardedDatabase: 4 devices") == 0);
}

TEST_CASE("ShardedDatabase: call on the fastest device, user ops by equal weights, errors", "[multi_device]") {
  MultiSetup ms({4000, 500, 2000}, "sharded-db");
  vgpu::ShardedDatabase db(ms.set);
  std::vector<float> a = random_floats(17 * 5, 1), b = random_floats(5 * 3, 2), c(17 * 3);
  const vgpu::TensorArg args[] = {vgpu::TensorArg(a.data(), {17, 5}), vgpu::TensorArg(b.data(), {5, 3}),
                                  vgpu::TensorArg(c.data(), {17, 3})};
  db.call("matmul", {17, 5, 3}, args);
  CHECK(compare(c, vgpu_test::matmul_reference(a, b, 17, 5, 3)).ok());
  const vgpu::MultiStats s = db.stats();
  CHECK(s.unsplit == 1);
  CHECK(s.items == std::vector<std::uint64_t>{0, 1, 0});  // test:1 is the fastest (500 µs)

  // A user op: no timings, equal weights; its batch runs and is right.
  db.add(
      "my_add",
      [](const vgpu::DeviceInfo& info, const vgpu::Shape& shape) { return vgpu::ops::add(info, shape.at(0)); },
      vgpu::PlanStability::fixed);
  const std::vector<double> w = db.weights("my_add", {17});
  REQUIRE(w.size() == 3);
  for (double x : w) CHECK(std::abs(x - 1.0 / 3) < 1e-12);
  std::vector<std::vector<float>> x(9, random_floats(17, 3)), out(9, std::vector<float>(17));
  db.call_batch("my_add", {17}, 9, [&](std::uint32_t i) {
    return std::vector<vgpu::TensorArg>{vgpu::TensorArg(x[i].data(), {17}), vgpu::TensorArg(x[i].data(), {17}),
                                        vgpu::TensorArg(out[i].data(), {17})};
  });
  CHECK(db.stats().last_shares == std::vector<std::uint32_t>{3, 3, 3});
  for (std::size_t i = 0; i < 9; ++i) CHECK(compare(out[i], vgpu_test::binary_reference(x[i], x[i], false)).ok());

  // A user op's failed device is left out for that op.
  ms.knobs[2]->lose_next = 1000;
  db.call_batch("my_add", {17}, 9, [&](std::uint32_t i) {
    return std::vector<vgpu::TensorArg>{vgpu::TensorArg(x[i].data(), {17}), vgpu::TensorArg(x[i].data(), {17}),
                                        vgpu::TensorArg(out[i].data(), {17})};
  });
  for (std::size_t i = 0; i < 9; ++i) CHECK(compare(out[i], vgpu_test::binary_reference(x[i], x[i], false)).ok());
  CHECK(db.stats().failures == 1);
  CHECK(db.weights("my_add", {17})[2] == 0.0);
  ms.knobs[2]->lose_next = 0;

  REQUIRE_VGPU_ERROR(invalid_argument, "no kernel is registered under 'nope'", db.call("nope", {1}, args));
  REQUIRE_VGPU_ERROR(invalid_argument, "Fix:", db.call_batch("nope", {1}, 3, {}));
  REQUIRE_VGPU_ERROR(invalid_argument, "matmul", db.call_batch("matmul", {17, 5}, 3, {}));
  REQUIRE_VGPU_ERROR(invalid_argument, "args_of", db.call_batch("matmul", {17, 5, 3}, 3, {}));
  REQUIRE_VGPU_ERROR(invalid_argument, "past", db.database(3));
  const std::uint64_t batches = db.stats().batches;
  db.call_batch("matmul", {17, 5, 3}, 0, {});  // count 0: nothing
  CHECK(db.stats().batches == batches);
}
