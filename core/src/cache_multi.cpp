// SPDX-License-Identifier: Apache-2.0
// core/src/cache_multi.cpp — Cache over a DeviceSet: sharded batches and row-split matmul, each
// device on its own thread, a failed device's share rerun on the others (docs/scale-out.md).
#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

#include "vgpu/cache.hpp"
#include "vgpu/error.hpp"
#include "vgpu/log.hpp"
#include "vgpu/runtime.hpp"

namespace vgpu {

namespace detail {
void check_matmul_operands(const Matrix& a, const Matrix& b);  // core/src/cache.cpp
}  // namespace detail

namespace {

const std::string kMatmul = "matmul";

/// Whether e says the device failed (its share may run elsewhere), as KernelDatabase::call
/// decides for demotion: a timeout or a bad argument is the caller's and reaches it.
bool device_failure(const Error& e) {
  const ErrorCategory c = e.category();
  return c == ErrorCategory::compile_error || c == ErrorCategory::out_of_memory || c == ErrorCategory::device_lost ||
         c == ErrorCategory::unavailable || c == ErrorCategory::not_supported;
}

using Range = std::pair<std::uint32_t, std::uint32_t>;  // [begin, end) of items

}  // namespace

struct Cache::Multi {
  explicit Multi(DeviceSet devices) : set(std::move(devices)) {}

  DeviceSet set;
  std::vector<std::unique_ptr<KernelDatabase>> own;  // devices 1..n-1 (device 0 is Cache::db_)
  std::vector<KernelDatabase*> dbs;                  // per device of the set
  std::atomic<std::uint64_t> split_min_work{kSplitMinWork};
  mutable std::mutex mutex;  // guards stats only; never held while a device works
  MultiStats stats;

  // Computes items [begin, end) on device dev, advancing done past each item it finished (so a
  // failure part way reruns only the rest). Called on that device's own thread.
  using Work = std::function<void(std::size_t dev, std::uint32_t begin, std::uint32_t end, std::uint32_t& done)>;

  /// Runs items [0, n) of op at shape (the shape that decides the weights) over the set.
  void spread(const Shape& shape, std::uint32_t n, const Work& work) {
    const std::size_t count = set.size();
    std::vector<bool> dead(count, false);
    std::vector<std::string> failures;
    std::vector<Range> pending{{0, n}};
    std::vector<std::uint64_t> done_items(count, 0);
    std::vector<std::uint32_t> first_shares;
    std::uint64_t rerun = 0;
    auto record = [&] {
      std::lock_guard lock(mutex);
      if (!first_shares.empty()) stats.last_shares = first_shares;
      for (std::size_t i = 0; i < count; ++i) stats.items[i] += done_items[i];
      stats.failures += failures.size();
      stats.rerun_items += rerun;
      stats.last_failures = failures;
    };
    while (!pending.empty()) {
      std::vector<double> w;
      try {
        w = set.weights(kMatmul, shape);
      } catch (const Error& e) {
        if (e.category() != ErrorCategory::unavailable) throw;
        w.assign(count, 0.0);  // every device demoted: reported below with what failed
      }
      double total_weight = 0;
      for (std::size_t i = 0; i < count; ++i) total_weight += dead[i] ? (w[i] = 0) : w[i];
      if (!(total_weight > 0)) {
        record();
        std::string why;
        for (const std::string& f : failures) why += "; " + f;
        fail(ErrorCategory::unavailable,
             "Cache: every device of the set (" + std::to_string(count) + ") failed or is demoted for matmul" +
                 (why.empty() ? std::string(".") : why),
             "check the devices with vgpu-probe, or add a device that works (e.g. cpu:0) to the DeviceSet.");
      }
      std::uint32_t total = 0;
      for (const Range& r : pending) total += r.second - r.first;
      const std::vector<std::uint32_t> parts = split_by_weight(w, total);
      if (first_shares.empty()) first_shares = parts;
      // Cut the pending ranges, in order, into each device's part.
      std::vector<std::vector<Range>> assigned(count);
      std::size_t p = 0;
      std::uint32_t at = pending.empty() ? 0 : pending[0].first;
      for (std::size_t i = 0; i < count; ++i)
        for (std::uint32_t need = parts[i]; need > 0;) {
          const std::uint32_t take = std::min(need, pending[p].second - at);
          assigned[i].emplace_back(at, at + take);
          need -= take;
          at += take;
          if (at == pending[p].second && ++p < pending.size()) at = pending[p].first;
        }
      struct Outcome {
        std::vector<Range> left;  // not computed because the device failed
        std::string failure;
        std::exception_ptr other;  // anything not a device failure: reaches the caller
      };
      std::vector<Outcome> out(count);
      auto run_device = [&](std::size_t i) {
        for (std::size_t r = 0; r < assigned[i].size(); ++r) {
          const auto [begin, end] = assigned[i][r];
          std::uint32_t done = 0;
          try {
            work(i, begin, end, done);
            done_items[i] += end - begin;
          } catch (const Error& e) {
            done_items[i] += done;
            if (!device_failure(e)) {
              out[i].other = std::current_exception();
              return;
            }
            out[i].failure = set.infos()[i].id() + ": " + e.what();
            out[i].left.emplace_back(begin + done, end);
            out[i].left.insert(out[i].left.end(), assigned[i].begin() + r + 1, assigned[i].end());
            return;
          } catch (...) {
            out[i].other = std::current_exception();
            return;
          }
        }
      };
      // One thread per device with work, the last on the caller's: devices upload, compute and
      // read back at once, none waiting for another's copies.
      std::vector<std::thread> threads;
      std::size_t last = count;
      for (std::size_t i = 0; i < count; ++i)
        if (!assigned[i].empty()) last = i;
      for (std::size_t i = 0; i < count; ++i)
        if (!assigned[i].empty() && i != last) threads.emplace_back(run_device, i);
      if (last < count) run_device(last);
      for (std::thread& t : threads) t.join();
      pending.clear();
      for (std::size_t i = 0; i < count; ++i) {
        if (out[i].other) {
          record();
          std::rethrow_exception(out[i].other);
        }
        if (out[i].failure.empty()) continue;
        dead[i] = true;
        failures.push_back(out[i].failure);
        std::uint32_t left = 0;
        for (const Range& r : out[i].left) left += r.second - r.first;
        rerun += left;
        pending.insert(pending.end(), out[i].left.begin(), out[i].left.end());
        log(LogLevel::warn, "Cache: " + out[i].failure + " — its " + std::to_string(left) +
                                " remaining item(s) run on the set's other devices.");
        try {  // the selection's demotion: later calls (and weights) leave the device out
          set.runtime().demote(kMatmul, shape, set.open(i), out[i].failure);
        } catch (const Error&) {
        }
      }
    }
    record();
  }
};

// Here, not in cache.cpp: constructors need Multi complete (to destroy multi_ if they throw).
Cache::Cache() : db_(Runtime::global()) {}

Cache::Cache(Device device) : db_(std::move(device)) {}

Cache::Cache(DeviceSet devices) : db_(devices.open(0)), multi_(std::make_unique<Multi>(std::move(devices))) {
  Multi& m = *multi_;
  m.dbs.push_back(&db_);
  for (std::size_t i = 1; i < m.set.size(); ++i) {
    m.own.push_back(std::make_unique<KernelDatabase>(m.set.open(i)));
    m.dbs.push_back(m.own.back().get());
  }
  m.stats.items.assign(m.set.size(), 0);
  m.stats.last_shares.assign(m.set.size(), 0);
}

Cache::~Cache() = default;

void Cache::matmul(const float* a, const float* b, float* c, std::uint32_t m, std::uint32_t k, std::uint32_t n) {
  if (multi_ && multi_->set.size() > 1 && m > 1 &&
      std::uint64_t{m} * k * n >= multi_->split_min_work.load(std::memory_order_relaxed)) {
    Multi& mu = *multi_;
    mu.spread({m, k, n}, m, [&](std::size_t dev, std::uint32_t begin, std::uint32_t end, std::uint32_t& done) {
      const std::uint32_t rows = end - begin;  // rows [begin, end) of C from those of A; B whole
      const TensorArg args[] = {TensorArg(a + std::size_t{begin} * k, {rows, k}), TensorArg(b, {k, n}),
                                TensorArg(c + std::size_t{begin} * n, {rows, n})};
      mu.dbs[dev]->call(kMatmul, {rows, k, n}, args);
      done = rows;
    });
    std::lock_guard lock(mu.mutex);
    ++mu.stats.splits;
    return;
  }
  const TensorArg args[] = {TensorArg(a, {m, k}), TensorArg(b, {k, n}), TensorArg(c, {m, n})};
  db_.call(kMatmul, {m, k, n}, args);
  if (multi_) {
    std::lock_guard lock(multi_->mutex);
    ++multi_->stats.unsplit;
    multi_->stats.items[0] += m;
  }
}

std::vector<Matrix> Cache::matmul_batch(const std::vector<std::pair<Matrix, Matrix>>& pairs) {
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    detail::check_matmul_operands(pairs[i].first, pairs[i].second);
    if (pairs[i].first.rows != pairs[0].first.rows || pairs[i].first.cols != pairs[0].first.cols ||
        pairs[i].second.cols != pairs[0].second.cols)
      fail(ErrorCategory::invalid_argument,
           "matmul_batch: pair " + std::to_string(i) + " is " + std::to_string(pairs[i].first.rows) + "x" +
               std::to_string(pairs[i].first.cols) + " · " + std::to_string(pairs[i].second.rows) + "x" +
               std::to_string(pairs[i].second.cols) + ", pair 0 " + std::to_string(pairs[0].first.rows) + "x" +
               std::to_string(pairs[0].first.cols) + " · " + std::to_string(pairs[0].second.rows) + "x" +
               std::to_string(pairs[0].second.cols) + "; a batch has one shape.",
           "call matmul_batch once per shape (group the pairs by shape).");
  }
  std::vector<Matrix> out;
  out.reserve(pairs.size());
  if (pairs.empty()) return out;
  const std::uint32_t m = pairs[0].first.rows, k = pairs[0].first.cols, n = pairs[0].second.cols;
  for (std::size_t i = 0; i < pairs.size(); ++i) out.emplace_back(m, n);
  auto one = [&](KernelDatabase& db, std::size_t i) {
    const TensorArg args[] = {TensorArg(pairs[i].first.data.data(), {m, k}), TensorArg(pairs[i].second.data.data(), {k, n}),
                              TensorArg(out[i].data.data(), {m, n})};
    db.call(kMatmul, {m, k, n}, args);
  };
  if (!multi_) {
    for (std::size_t i = 0; i < pairs.size(); ++i) one(db_, i);
    return out;
  }
  if (pairs.size() > UINT32_MAX)
    fail(ErrorCategory::invalid_argument, "matmul_batch: " + std::to_string(pairs.size()) + " pairs is too many.",
         "split the batch into parts of at most 2^32-1 pairs.");
  Multi& mu = *multi_;
  mu.spread({m, k, n}, static_cast<std::uint32_t>(pairs.size()),
            [&](std::size_t dev, std::uint32_t begin, std::uint32_t end, std::uint32_t& done) {
              for (std::uint32_t i = begin; i < end; ++i, ++done) one(*mu.dbs[dev], i);
            });
  std::lock_guard lock(mu.mutex);
  ++mu.stats.batches;
  return out;
}

std::uint64_t Cache::compiles() const {
  std::uint64_t sum = db_.misses();
  if (multi_)
    for (const auto& db : multi_->own) sum += db->misses();
  return sum;
}

std::uint64_t Cache::hits() const {
  std::uint64_t sum = db_.hits();
  if (multi_)
    for (const auto& db : multi_->own) sum += db->hits();
  return sum;
}

const DeviceSet* Cache::devices() const noexcept { return multi_ ? &multi_->set : nullptr; }

MultiStats Cache::multi_stats() const {
  if (!multi_) return {};
  std::lock_guard lock(multi_->mutex);
  return multi_->stats;
}

void Cache::set_split_min_work(std::uint64_t work) noexcept {
  if (multi_) multi_->split_min_work.store(work, std::memory_order_relaxed);
}

std::uint64_t Cache::split_min_work() const noexcept {
  return multi_ ? multi_->split_min_work.load(std::memory_order_relaxed) : kSplitMinWork;
}

}  // namespace vgpu
