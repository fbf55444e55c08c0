// SPDX-License-Identifier: Apache-2.0
// bench/bench_queue.cpp — vgpu-bench-queue: draining N work items through one PersistentQueue
// run against N separate PersistentKernel calls of the equivalent one-item kernel (the same
// add-one queue kernel, one item per call), side by side on every device, N = 16, 1 024, 65 536,
// payloads of 4–256 bytes. Prints µs per item for both and their ratio (the goal:
// ≥ 20× at N = 1 024 on every GPU backend). Separate calls of large N are sampled: the output
// says how many calls were timed. VGPU_BENCH_BACKENDS restricts the backends.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "vgpu/vgpu.hpp"

namespace {

using namespace vgpu;
namespace vb = vgpu::bench;

constexpr std::uint32_t kMaxPayloadWords = 64;  // 256 bytes

// The items of one size: random payloads of 4–256 bytes (whole words, so add-one sees them all).
PersistentQueue make_queue(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  PersistentQueue q;
  std::vector<std::uint32_t> words(kMaxPayloadWords);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t w = 1 + rng() % kMaxPayloadWords;
    for (std::uint32_t k = 0; k < w; ++k) words[k] = rng();
    q.push(i, std::as_bytes(std::span<const std::uint32_t>(words.data(), w)));
  }
  return q;
}

// One item per call: the add-one kernel over a queue ABI layout of one item, as a PersistentKernel.
struct OneItemKernel {
  std::vector<std::uint32_t> in, out;
  PersistentKernel pk;
  explicit OneItemKernel(Device& d) : in(4 + kMaxPayloadWords), out(2 + kMaxPayloadWords), pk(d, plan()) {}
  static KernelPlan plan() {
    KernelPlan p;
    p.source = queue_add_one_kernel();
    p.tensors = {{"in", DType::u32, {4 + kMaxPayloadWords}, Access::read, false},
                 {"out", DType::u32, {2 + kMaxPayloadWords}, Access::read_write, false}};
    PlanStep s;
    s.slot_tensor = {{0, 0}, {1, 1}};
    s.params = ParamsBlock::of(QueueLaunch{0, 1});
    s.groups = Groups{1, 1, 1};
    p.steps.push_back(s);
    return p;
  }
  // Runs item i of q; returns false when its result is wrong.
  bool call(const PersistentQueue& q, std::size_t i) {
    const auto p = q.payload(i);
    in[0] = 4;
    in[1] = static_cast<std::uint32_t>(p.size());
    in[2] = 2;
    in[3] = static_cast<std::uint32_t>(p.size());
    std::memcpy(in.data() + 4, p.data(), p.size());
    std::fill(out.begin(), out.begin() + 2, 0u);
    pk({TensorArg(in.data(), {4 + kMaxPayloadWords}), TensorArg(out.data(), {2 + kMaxPayloadWords})});
    std::uint32_t first = 0;
    std::memcpy(&first, p.data(), 4);
    return out[1] == 1 && out[0] == p.size() && out[2] == first + 1;
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  const vb::Options opt = vb::parse_args(
      argc, argv, "one PersistentQueue run of N items vs N separate PersistentKernel calls, per device.");
  nlohmann::json doc;
  doc["bench"] = "vgpu-bench-queue";
  doc["machine"] = vb::print_header("vgpu-bench-queue: one queue run vs separate calls", opt);
  const int samples = opt.quick ? 3 : 9;
  const std::size_t max_separate = opt.quick ? 256 : 2048;  // separate calls timed per sample at most
  vb::Table table({"device", "N", "queue µs/item", "separate µs/item", "ratio", "launches", "separate calls timed"});
  bool all_right = true;
  const std::vector<BackendKind> wanted = vb::backends_from_env();
  for (const DeviceInfo& info : Runtime::global().devices()) {
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), info.backend) == wanted.end()) continue;
    Device device = Runtime::global().open(info);
    try {
      QueuePipeline pipeline(device, queue_add_one_kernel());
      OneItemKernel one(device);
      for (std::size_t n : {std::size_t{16}, std::size_t{1024}, std::size_t{65536}}) {
        const PersistentQueue q = make_queue(n, static_cast<unsigned>(n));
        QueueReport r = pipeline.run(q);  // warm-up (grows the buffers once)
        const std::size_t sampled = std::min(n, max_separate);
        for (std::size_t i = 0; i < std::min<std::size_t>(sampled, 8); ++i) all_right &= one.call(q, i);
        std::vector<double> tq, ts;
        for (int s = 0; s < samples; ++s) {  // interleaved: one queue sample, one separate sample
          auto t0 = vb::Clock::now();
          r = pipeline.run(q);
          tq.push_back(vb::seconds_since(t0) / double(n));
          t0 = vb::Clock::now();
          for (std::size_t i = 0; i < sampled; ++i) all_right &= one.call(q, (i * 7919) % n);
          ts.push_back(vb::seconds_since(t0) / double(sampled));
        }
        for (std::size_t i = 0; i < n; i += 97) {
          std::uint32_t a = 0, b = 0;
          std::memcpy(&a, q.payload(i).data(), 4);
          std::memcpy(&b, r.results[i].payload.data(), 4);
          all_right &= b == a + 1 && r.results[i].id == q.id(i);
        }
        const double mq = median(tq), ms = median(ts);
        table.add({info.id(), std::to_string(n), vb::fmt(mq * 1e6, 3), vb::fmt(ms * 1e6, 2), vb::fmt_ratio(ms / mq),
                   std::to_string(r.kernel_launches), sampled == n ? "all" : std::to_string(sampled) + " (sample)"});
        doc["results"].push_back({{"device", info.id()},
                                  {"n", n},
                                  {"queue_us_per_item", mq * 1e6},
                                  {"separate_us_per_item", ms * 1e6},
                                  {"ratio", ms / mq},
                                  {"launches", r.kernel_launches},
                                  {"separate_calls_timed", sampled}});
      }
    } catch (const Error& e) {
      std::cout << info.id() << ": skipped: " << e.what() << "\n";
    }
  }
  table.print();
  std::cout << "\npayloads: 4-256 bytes (random whole words); separate calls of N > " << max_separate
            << " are a sample of " << max_separate << " calls per timing round, per-item time extrapolated.\n"
            << (all_right ? "results: all checked results right\n" : "results: WRONG RESULTS\n");
  doc["all_right"] = all_right;
  return vb::finish(doc, opt) && all_right ? 0 : 1;
}
