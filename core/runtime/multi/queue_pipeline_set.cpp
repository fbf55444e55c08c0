// SPDX-License-Identifier: Apache-2.0
// core/runtime/multi/queue_pipeline_set.cpp — QueuePipelineSet: one queue over a device set, ranges by
// measured seconds per item, spread by the engine of spread.hpp.
#include "vgpu/queue_pipeline_set.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <new>

#include "device_core.hpp"
#include "loss_policy.hpp"
#include "queue_layout.hpp"
#include "spread.hpp"
#include "vgpu/backend/timing_clock.hpp"
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
  QueueConfig config;
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
  s.config = config;
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
      if (!detail::gives_way(e)) throw;  // loss_policy.hpp, step 3
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
  static_assert(PersistentQueue::kMaxItems <= UINT32_MAX, "the spread engine counts items in 32 bits");
  const std::size_t n = s.set.size();
  const std::size_t items_n = queue.size();
  // The merged report, laid out before the run: item i's output at at[i], the capacities of the
  // items before it (bytes it may write), so each device writes its range's outputs in place
  // while it runs — no second copy of the outputs to merge (storage may hold gaps where an item
  // wrote less than its capacity; each result's span says its bytes).
  QueueReport report;
  std::vector<std::uint64_t> at(items_n + 1, 0);
  detail::QueueLimits limits;
  limits.output_bytes = s.config.output_bytes;
  for (std::size_t i = 0; i < items_n; ++i)
    at[i + 1] = checked_add(at[i], detail::queue_out_capacity(queue, i, limits), "the queue's output capacity");
  try {
    report.storage.resize(static_cast<std::size_t>(at[items_n]));
    report.results.resize(items_n);
  } catch (const std::exception&) {  // bad_alloc, or length_error past what a vector can hold
    fail(ErrorCategory::out_of_memory,
         std::string(kWho) + ": no host memory for the results of " + std::to_string(items_n) + " items (" +
             std::to_string(at[items_n]) + " bytes of output capacity).",
         "split the queue into smaller ones and run them one after another.");
  }
  std::vector<double> seconds(n, 0.0);
  std::vector<std::uint64_t> items(n, 0), launches(n, 0), trips(n, 0);

  detail::SpreadTask task;
  task.who = kWho;
  task.op = s.kernel.name;
  task.ids = s.set.ids();
  task.weights = [&] {
    std::lock_guard lock(s.mutex);
    return s.weights_locked();
  };
  task.work = [&](std::size_t dev, std::uint32_t begin, std::uint32_t end, std::uint32_t& done) {
    // Timed on the device's own clock (TimingClock), as calibration times devices.
    const TimingClock& clock = detail::DeviceAccess::clock(s.pipes[dev]->device());
    const auto t0 = clock.now();
    const QueuePipeline::Sink sink{report.storage.data() + at[begin], report.results.data() + begin};
    const QueueReport part = s.pipes[dev]->run_into(queue, begin, end - begin, sink);  // all or nothing
    seconds[dev] += std::chrono::duration<double>(clock.now() - t0).count();
    items[dev] += end - begin;
    launches[dev] += part.kernel_launches;
    trips[dev] += part.round_trips;
    done = end - begin;
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
  detail::spread(task, static_cast<std::uint32_t>(items_n));
  for (std::size_t i = 0; i < n; ++i) {
    report.kernel_launches += launches[i];
    report.round_trips += trips[i];
  }
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

std::uint64_t QueuePipelineSet::buffer_bytes() const {
  std::uint64_t sum = 0;  // pipes is fixed once the set is made: no lock needed to walk it
  for (const auto& pipe : state_->pipes)
    if (pipe) sum += pipe->buffer_bytes();
  return sum;
}

MultiStats QueuePipelineSet::stats() const {
  std::lock_guard lock(state_->mutex);
  return state_->stats;
}

}  // namespace vgpu
