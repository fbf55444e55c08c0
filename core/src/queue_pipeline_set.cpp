// SPDX-License-Identifier: Apache-2.0
// core/src/queue_pipeline_set.cpp — QueuePipelineSet: one queue over a device set, ranges by
// measured seconds per item, spread by the engine of spread.hpp.
#include "vgpu/queue_pipeline_set.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>

#include "spread.hpp"
#include "vgpu/error.hpp"
#include "vgpu/log.hpp"

namespace vgpu {

namespace {
const char* const kWho = "QueuePipelineSet";
}  // namespace

struct QueuePipelineSet::State {
  explicit State(DeviceSet s) : set(std::move(s)) {}

  DeviceSet set;
  KernelSource kernel;
  std::vector<std::unique_ptr<QueuePipeline>> pipes;  // per device; null: left out at construction
  std::mutex run_mutex;                               // serialises runs
  mutable std::mutex mutex;                           // guards what follows
  std::vector<double> spi;                            // seconds per item measured (0: none yet)
  std::vector<bool> out;                              // left out
  MultiStats stats;

  std::vector<double> weights_locked() const {
    const std::size_t n = set.size();
    std::vector<double> known;
    for (std::size_t i = 0; i < n; ++i)
      if (!out[i] && spi[i] > 0) known.push_back(1.0 / spi[i]);
    double median = 1.0;  // nothing measured yet: equal weights
    if (!known.empty()) {
      std::sort(known.begin(), known.end());
      const std::size_t h = known.size() / 2;
      median = known.size() % 2 ? known[h] : (known[h - 1] + known[h]) / 2;
    }
    std::vector<double> w(n, 0.0);
    double total = 0;
    for (std::size_t i = 0; i < n; ++i) total += w[i] = out[i] ? 0.0 : (spi[i] > 0 ? 1.0 / spi[i] : median);
    if (total > 0)
      for (double& x : w) x /= total;
    return w;
  }
};

QueuePipelineSet::QueuePipelineSet(DeviceSet devices, KernelSource kernel, QueueConfig config)
    : state_(std::make_unique<State>(std::move(devices))) {
  State& s = *state_;
  const std::size_t n = s.set.size();
  s.kernel = kernel;
  s.spi.assign(n, 0.0);
  s.out.assign(n, false);
  s.stats.items.assign(n, 0);
  s.stats.last_shares.assign(n, 0);
  std::exception_ptr last;
  for (std::size_t i = 0; i < n; ++i) {
    try {
      s.pipes.push_back(std::make_unique<QueuePipeline>(s.set.open(i), kernel, config));
    } catch (const Error& e) {
      // A device that cannot take the kernel (no dialect for it, a compile error) is left out;
      // a kernel that breaks the ABI is the caller's on every device.
      if (!detail::device_failure(e)) throw;
      last = std::current_exception();
      s.pipes.push_back(nullptr);
      s.out[i] = true;
      s.stats.last_failures.push_back(s.set.infos()[i].id() + ": " + e.what());
      log(LogLevel::warn, std::string(kWho) + ": " + s.stats.last_failures.back() + " — left out of the set.");
    }
  }
  if (std::all_of(s.out.begin(), s.out.end(), [](bool o) { return o; })) std::rethrow_exception(last);
}

QueuePipelineSet::~QueuePipelineSet() = default;

QueueReport QueuePipelineSet::run(const PersistentQueue& queue) {
  State& s = *state_;
  std::lock_guard run_lock(s.run_mutex);
  if (queue.empty()) return {};
  if (queue.size() > 0xFFFFFFFFull)  // a queue holds at most kMaxItems; checked for the 32-bit engine
    fail(ErrorCategory::invalid_argument, std::string(kWho) + ": a queue of " + std::to_string(queue.size()) + " items.",
         "split the queue into queues of at most 2^32-1 items.");
  const std::size_t n = s.set.size();
  std::mutex parts_mutex;
  std::map<std::uint32_t, QueueReport> parts;  // by first item: merged in queue order below
  std::vector<double> seconds(n, 0.0);
  std::vector<std::uint64_t> items(n, 0);

  detail::SpreadTask task;
  task.who = kWho;
  task.op = s.kernel.name;
  task.ids = s.set.ids();
  task.weights = [&] {
    std::lock_guard lock(s.mutex);
    return s.weights_locked();
  };
  task.work = [&](std::size_t dev, std::uint32_t begin, std::uint32_t end, std::uint32_t& done) {
    const auto t0 = std::chrono::steady_clock::now();
    QueueReport part = s.pipes[dev]->run(queue, begin, end - begin);  // all or nothing
    seconds[dev] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    items[dev] += end - begin;
    done = end - begin;
    std::lock_guard lock(parts_mutex);
    parts.emplace(begin, std::move(part));
  };
  task.failed = [&](std::size_t dev, const std::string&) {
    std::lock_guard lock(s.mutex);
    s.out[dev] = true;  // from then on: a queue kernel has no selection to demote it in
  };
  task.record = [&](const detail::SpreadRecord& r) {
    std::lock_guard lock(s.mutex);
    if (!r.first_shares.empty()) s.stats.last_shares = r.first_shares;
    for (std::size_t i = 0; i < n; ++i) s.stats.items[i] += r.items[i];
    s.stats.failures += r.failures.size();
    s.stats.rerun_items += r.rerun;
    s.stats.last_failures = r.failures;
    // Seconds per item of the shares that finished, blended with the earlier runs' so one noisy
    // run does not swing the split.
    for (std::size_t i = 0; i < n; ++i)
      if (items[i] > 0) {
        const double measured = seconds[i] / double(items[i]);
        s.spi[i] = s.spi[i] > 0 ? 0.5 * s.spi[i] + 0.5 * measured : measured;
      }
  };
  detail::spread(task, static_cast<std::uint32_t>(queue.size()));

  QueueReport report;
  std::size_t bytes = 0;
  for (const auto& [first, part] : parts) bytes += part.storage.size();
  report.storage.reserve(bytes);
  report.results.reserve(queue.size());
  std::vector<std::pair<std::size_t, std::size_t>> where;  // each result's offset and length in storage
  where.reserve(queue.size());
  for (auto& [first, part] : parts) {
    report.kernel_launches += part.kernel_launches;
    report.round_trips += part.round_trips;
    const std::byte* base = part.storage.data();
    const std::size_t offset = report.storage.size();
    report.storage.insert(report.storage.end(), part.storage.begin(), part.storage.end());
    for (const QueueResult& r : part.results) {
      report.results.push_back(QueueResult{r.id, {}});
      where.emplace_back(r.payload.empty() ? offset : offset + static_cast<std::size_t>(r.payload.data() - base),
                         r.payload.size());
    }
  }
  // Spans last, once storage stops moving.
  for (std::size_t i = 0; i < report.results.size(); ++i)
    report.results[i].payload = std::span<const std::byte>(report.storage.data() + where[i].first, where[i].second);
  {
    std::lock_guard lock(s.mutex);
    ++s.stats.batches;
  }
  return report;
}

const DeviceSet& QueuePipelineSet::devices() const noexcept { return state_->set; }

std::vector<double> QueuePipelineSet::weights() const {
  std::lock_guard lock(state_->mutex);
  return state_->weights_locked();
}

std::vector<double> QueuePipelineSet::seconds_per_item() const {
  std::lock_guard lock(state_->mutex);
  return state_->spi;
}

std::vector<bool> QueuePipelineSet::left_out() const {
  std::lock_guard lock(state_->mutex);
  return state_->out;
}

MultiStats QueuePipelineSet::stats() const {
  std::lock_guard lock(state_->mutex);
  return state_->stats;
}

}  // namespace vgpu
