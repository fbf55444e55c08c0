// SPDX-License-Identifier: Apache-2.0
// bench/bench_multi.cpp — vgpu-bench-multi: several devices of one process (issue 18). In one run:
// a batched matmul (default 64 × 2048³) on 1, 2, ... devices of the set, throughput and speedup
// against one device; then one split matmul (default 8192³) on every device of the set against
// one; then one PersistentQueue (default 262144 items of 1 KiB, the add-one kernel) drained over
// every device of the set (QueuePipelineSet) against the first device alone (QueuePipeline).
// Goals on the multi-GPU machine: ≥ 1.8× on 2 GPUs for the batch, ≥ 1.7× for the split.
// The set: --backend KIND's devices, else VGPU_DEVICES, else the devices of the backend that has the most (registry
// order breaks ties: CUDA first). On the 2-core build machine use VGPU_CPU_DEVICES=2 and --quick: the logical CPU
// devices share one CPU, so ~1× is the expected (and right) answer there.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <map>
#include <span>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "vgpu/vgpu.hpp"

namespace {

using namespace vgpu;
using namespace vgpu::bench;

struct Sizes {
  std::uint32_t batch = 64, size = 2048, split = 8192, runs = 3;
  std::string backend;                           // --backend KIND: the set is that backend's devices
  std::uint32_t queue = 262144, payload = 1024;  // --queue N items of --payload bytes
};

// Takes --batch N, --size N, --split N and --runs N out of argv (the rest go to parse_args).
Sizes take_sizes(int& argc, char** argv, bool quick_default) {
  Sizes s;
  if (quick_default) s = {8, 256, 1024, 3, {}, 4096, 1024};
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    std::uint32_t* field = a == "--batch"     ? &s.batch
                           : a == "--size"    ? &s.size
                           : a == "--split"   ? &s.split
                           : a == "--runs"    ? &s.runs
                           : a == "--queue"   ? &s.queue
                           : a == "--payload" ? &s.payload
                                              : nullptr;
    const long most = field == &s.queue ? (1L << 24) : 65536;
    if (a == "--backend" && i + 1 < argc) {
      s.backend = argv[++i];
    } else if (field && i + 1 < argc) {
      const long v = std::strtol(argv[++i], nullptr, 10);
      if (v < 1 || v > most) {
        std::cerr << "vgpu-bench-multi: " << a << " needs a number from 1 to " << most << "\n";
        std::exit(2);
      }
      *field = static_cast<std::uint32_t>(v);
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  return s;
}

// The set's ids: VGPU_DEVICES, else the backend with the most devices (first in registry order on a tie).
std::vector<std::string> pick_ids(Runtime& rt, const std::string& backend) {
  if (!backend.empty()) {
    std::vector<std::string> ids;
    for (const DeviceInfo& d : rt.backend_devices(parse_backend_kind(backend))) ids.push_back(d.id());
    if (ids.empty())
      fail(ErrorCategory::unavailable, "--backend " + backend + ": that backend has no device here.",
           "name a backend vgpu-probe lists devices for.");
    return ids;
  }
  if (!rt.config().devices.empty()) return rt.config().devices;
  std::map<BackendKind, std::vector<std::string>> by_kind;
  std::vector<BackendKind> order;
  for (const DeviceInfo& d : rt.devices()) {
    if (!by_kind.count(d.backend)) order.push_back(d.backend);
    by_kind[d.backend].push_back(d.id());
  }
  BackendKind best = order.at(0);
  for (BackendKind k : order)
    if (by_kind[k].size() > by_kind[best].size()) best = k;
  return by_kind[best];
}

Matrix random_matrix(std::uint32_t r, std::uint32_t c, unsigned seed) {
  Matrix m(r, c);
  m.data = random_floats(m.data.size(), seed);
  return m;
}

// Prints cells left-aligned in columns of the given widths.
void print_row(const std::vector<std::string>& cells, const std::vector<int>& widths) {
  for (std::size_t i = 0; i < cells.size(); ++i) {
    std::string c = cells[i];
    if (c.size() < std::size_t(widths[i])) c.resize(std::size_t(widths[i]), ' ');
    std::cout << c << ' ';
  }
  std::cout << '\n';
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) quick |= std::strcmp(argv[i], "--quick") == 0;
  const Sizes sz = take_sizes(argc, argv, quick);
  const Options o =
      parse_args(argc, argv,
                 "batched and split matmul over 1, 2, ... devices of a DeviceSet (VGPU_DEVICES); "
                 "--batch N --size N (batch of N×size³), --split N (one N³), --runs N, --backend KIND "
                 "(the set: that backend's devices), --queue N --payload B (a queue of N items of B bytes)");
  nlohmann::json doc;
  doc["machine"] = print_header("vgpu-bench-multi: several devices in one process", o);
  try {
    std::vector<BackendKind> kinds;
    std::vector<std::string> ids;
    {
      Runtime probe;
      ids = pick_ids(probe, sz.backend);
      for (const std::string& id : ids) {
        const BackendKind k = parse_backend_kind(id.substr(0, id.find(':')));
        if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
      }
    }
    RuntimeOptions ro = RuntimeOptions::from_env();
    ro.allowed = kinds;  // calibrate (for the shares) only the backends of the set
    ro.forced_device.clear();
    Runtime rt(ro);
    const DeviceSet all(rt, ids);
    std::cout << "devices:";
    for (const DeviceInfo& d : all.infos()) std::cout << " " << d.id() << " (" << d.name << ")";
    std::cout << "\n\n";
    doc["devices"] = all.ids();

    // Part 1: batch of sz.batch × size³ on the first 1, 2, ... devices.
    const std::uint32_t n = sz.size;
    std::vector<std::pair<Matrix, Matrix>> pairs;
    for (std::uint32_t i = 0; i < sz.batch; ++i)
      pairs.emplace_back(random_matrix(n, n, 2 * i), random_matrix(n, n, 2 * i + 1));
    const double batch_flop = 2.0 * n * n * double(n) * sz.batch;
    std::cout << "batched matmul: " << sz.batch << " x " << n << "^3 (" << sz.runs
              << " runs after one warm-up, median)\n";
    print_row({"devices", "seconds", "GFLOP/s", "speedup vs 1", "shares"}, {8, 10, 10, 13, 24});
    // One cache per device count, warmed (calibration for the shares, compiles, first uploads),
    // then timed interleaved: run r of 1 device, of 2, ..., so drifting load hits all alike.
    std::vector<std::unique_ptr<Cache>> caches;
    for (std::size_t k = 1; k <= all.size(); ++k) {
      caches.push_back(std::make_unique<Cache>(
          DeviceSet(rt, std::vector<std::string>(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k)))));
      (void)caches.back()->matmul_batch(pairs);
    }
    std::vector<std::vector<double>> times(caches.size());
    for (std::uint32_t r = 0; r < sz.runs; ++r)
      for (std::size_t k = 0; k < caches.size(); ++k) {
        const auto t0 = Clock::now();
        (void)caches[k]->matmul_batch(pairs);
        times[k].push_back(seconds_since(t0));
      }
    const double one = median_of(times[0]);
    for (std::size_t k = 0; k < caches.size(); ++k) {
      const double med = median_of(times[k]);
      std::string shares;
      for (std::uint32_t x : caches[k]->multi_stats().last_shares)
        shares += (shares.empty() ? "" : "/") + std::to_string(x);
      print_row({std::to_string(k + 1), fmt(med, 4), fmt(batch_flop / med / 1e9, 1), fmt(one / med, 2) + "x", shares},
                {8, 10, 10, 13, 24});
      doc["batch"].push_back({{"devices", k + 1}, {"seconds", med}, {"speedup", one / med}, {"shares", shares}});
    }
    caches.clear();
    std::cout << "goal on 2 GPUs (64 x 2048^3): >= 1.8x\n\n";

    // Part 2: one split matmul, every device of the set against the first one.
    pairs.clear();
    const std::uint32_t s = sz.split;
    const Matrix a = random_matrix(s, s, 7), b = random_matrix(s, s, 8);
    const double split_flop = 2.0 * s * s * double(s);
    std::cout << "split matmul: " << s << "^3, rows of C over the devices\n";
    print_row({"devices", "seconds", "GFLOP/s", "speedup vs 1", "rows"}, {8, 10, 10, 13, 24});
    std::vector<std::size_t> counts{1};
    if (all.size() > 1) counts.push_back(all.size());
    for (std::size_t k : counts) {
      caches.push_back(std::make_unique<Cache>(
          DeviceSet(rt, std::vector<std::string>(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k)))));
      caches.back()->set_split_min_work(0);  // measure the split itself at whatever size was asked
      (void)caches.back()->matmul(a, b);
    }
    std::vector<std::vector<double>> split_times(caches.size());
    for (std::uint32_t r = 0; r < sz.runs; ++r)
      for (std::size_t i = 0; i < caches.size(); ++i) {
        const auto t0 = Clock::now();
        (void)caches[i]->matmul(a, b);
        split_times[i].push_back(seconds_since(t0));
      }
    const double split_one = median_of(split_times[0]);
    for (std::size_t i = 0; i < caches.size(); ++i) {
      const double med = median_of(split_times[i]);
      std::string rows = std::to_string(s);
      if (counts[i] > 1) {
        rows.clear();
        for (std::uint32_t x : caches[i]->multi_stats().last_shares)
          rows += (rows.empty() ? "" : "/") + std::to_string(x);
      }
      print_row(
          {std::to_string(counts[i]), fmt(med, 4), fmt(split_flop / med / 1e9, 1), fmt(split_one / med, 2) + "x", rows},
          {8, 10, 10, 13, 24});
      doc["split"].push_back({{"devices", counts[i]}, {"seconds", med}, {"speedup", split_one / med}, {"rows", rows}});
    }
    std::cout << "goal on 2 GPUs (8192^3): >= 1.7x\n\n";
    caches.clear();

    // Part 3: one queue over every device of the set (QueuePipelineSet) against the first device
    // alone (QueuePipeline), timed interleaved. The set's shares follow the seconds per item it
    // measured in its earlier runs (the warm-up is its first measurement).
    PersistentQueue queue;
    {
      std::vector<std::uint32_t> words((sz.payload + 3) / 4);
      for (std::uint32_t i = 0; i < sz.queue; ++i) {
        for (std::size_t w = 0; w < words.size(); ++w) words[w] = i * 2654435761u + std::uint32_t(w);
        queue.push(i, std::as_bytes(std::span<const std::uint32_t>(words)).first(sz.payload));
      }
    }
    std::cout << "queue: " << sz.queue << " items of " << sz.payload << " bytes, add-one kernel (" << sz.runs
              << " runs after one warm-up, median)\n";
    print_row({"devices", "seconds", "items/s", "speedup vs 1", "shares"}, {8, 10, 12, 13, 24});
    // Row 1: QueuePipeline on the first device; row 2: QueuePipelineSet over the whole set. With
    // one device the set's gain, if any, is its in-place merge (each range's outputs land straight
    // in the report), not a second device.
    QueuePipeline single(all.open(0), queue_add_one_kernel());
    QueuePipelineSet spread(all, queue_add_one_kernel());
    (void)single.run(queue);
    (void)spread.run(queue);
    std::vector<double> t_single, t_spread;
    for (std::uint32_t r = 0; r < sz.runs; ++r) {
      auto t0 = Clock::now();
      (void)single.run(queue);
      t_single.push_back(seconds_since(t0));
      t0 = Clock::now();
      (void)spread.run(queue);
      t_spread.push_back(seconds_since(t0));
    }
    const double q_one = median_of(t_single), q_set = median_of(t_spread);
    std::string qshares;
    for (std::uint32_t x : spread.stats().last_shares) qshares += (qshares.empty() ? "" : "/") + std::to_string(x);
    print_row({"1 pipe", fmt(q_one, 4), fmt(sz.queue / q_one, 0), "1.00x", std::to_string(sz.queue)},
              {8, 10, 12, 13, 24});
    print_row({std::to_string(all.size()) + " set", fmt(q_set, 4), fmt(sz.queue / q_set, 0),
               fmt(q_one / q_set, 2) + "x", qshares},
              {8, 10, 12, 13, 24});
    doc["queue"].push_back({{"devices", 1}, {"seconds", q_one}, {"speedup", 1.0}});
    doc["queue"].push_back(
        {{"devices", all.size()}, {"seconds", q_set}, {"speedup", q_one / q_set}, {"shares", qshares}});
    if (kinds.size() == 1 && kinds[0] == BackendKind::cpu)
      std::cout
          << "note: logical CPU devices (VGPU_CPU_DEVICES) share one CPU and its thread pool: ~1x is expected here.\n";
  } catch (const Error& e) {
    std::cerr << "vgpu-bench-multi: " << e.what() << "\n";
    return 1;
  }
  return finish(doc, o) ? 0 : 1;
}
