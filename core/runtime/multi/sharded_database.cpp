// SPDX-License-Identifier: Apache-2.0
// core/runtime/multi/sharded_database.cpp — ShardedDatabase: a KernelDatabase per device of a set, with
// batches spread by the engine of spread.hpp (the one place that spreads calls).
#include "vgpu/sharded_database.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "spread.hpp"
#include "vgpu/error.hpp"
#include "vgpu/ops.hpp"
#include "vgpu/runtime.hpp"

namespace vgpu {

namespace {
const char* const kWho = "ShardedDatabase";
}  // namespace

namespace detail {

struct ShardedState {
  explicit ShardedState(DeviceSet s) : set(std::move(s)) {}

  DeviceSet set;
  std::vector<std::unique_ptr<KernelDatabase>> dbs;   // per device of the set
  mutable std::mutex mutex;                           // guards what follows; never held while a device works
  std::set<std::string> added;                        // ids registered through add(): equal weights
  std::map<std::string, std::vector<bool>> left_out;  // per added id: devices that failed for it
  MultiStats stats;

  bool is_added(const std::string& id) const {
    std::lock_guard lock(mutex);
    return added.count(id) != 0;
  }

  // Throws invalid_argument (with a Fix) unless id is known here and, for a built-in op, shape
  // has its form: checked before any thread starts, so the error is the caller's at once.
  void check(const std::string& id, const Shape& shape) const {
    if (is_added(id)) return;
    const std::vector<std::string> builtin = ops::names();
    if (std::find(builtin.begin(), builtin.end(), id) == builtin.end()) {
      std::string known;
      for (const std::string& b : builtin) known += (known.empty() ? "" : ", ") + b;
      std::lock_guard lock(mutex);
      for (const std::string& a : added) known += ", " + a;
      fail(ErrorCategory::invalid_argument,
           std::string(kWho) + ": no kernel is registered under '" + id + "' (known: " + known + ").",
           "register it first with ShardedDatabase::add(id, factory), or use a built-in op's name.");
    }
    ops::check_shape(id, shape);
  }

  std::vector<double> weights(const std::string& id, const Shape& shape) const {
    const std::size_t n = set.size();
    if (is_added(id)) {
      // A user op has no selection timings: equal weights, less the devices that failed for it.
      std::vector<double> w(n, 1.0);
      std::lock_guard lock(mutex);
      auto it = left_out.find(id);
      double total = 0;
      for (std::size_t i = 0; i < n; ++i) total += (it != left_out.end() && it->second[i]) ? (w[i] = 0) : w[i];
      if (total > 0)
        for (double& x : w) x /= total;
      return w;
    }
    try {
      return set.weights(id, shape);
    } catch (const Error& e) {
      if (e.category() != ErrorCategory::unavailable) throw;
      return std::vector<double>(n, 0.0);  // every device demoted: spread() reports it with what failed
    }
  }

  // Runs items [0, count) of id over the set; stat is the counter this kind of call bumps.
  void run(const std::string& id, const Shape& shape, std::uint32_t count, const ShardedDatabase::RangeWork& work,
           std::uint64_t MultiStats::*stat, bool keep_shares) {
    SpreadTask task;
    task.who = kWho;
    task.op = id;
    task.ids = set.ids();
    task.weights = [&] { return weights(id, shape); };
    task.work = [&](std::size_t dev, std::uint32_t begin, std::uint32_t end, std::uint32_t& done) {
      work(*dbs[dev], begin, end, done);
    };
    task.failed = [&](std::size_t dev, const std::string& failure) {
      if (is_added(id)) {
        std::lock_guard lock(mutex);
        auto& out = left_out[id];
        out.resize(set.size(), false);
        out[dev] = true;
        return;
      }
      try {  // the selection's demotion: later calls (and weights) leave the device out
        set.runtime().demote(id, shape, set.open(dev), failure);
      } catch (const Error&) {
      }
    };
    task.record = [&](const SpreadRecord& r) {
      std::lock_guard lock(mutex);
      if (keep_shares && !r.first_shares.empty()) stats.last_shares = r.first_shares;
      for (std::size_t i = 0; i < r.items.size(); ++i) stats.items[i] += r.items[i];
      stats.failures += r.failures.size();
      stats.rerun_items += r.rerun;
      stats.last_failures = r.failures;
    };
    spread(task, count);  // throws past the counter: only finished calls count
    std::lock_guard lock(mutex);
    ++(stats.*stat);
  }
};

}  // namespace detail

ShardedDatabase::ShardedDatabase(DeviceSet devices)
    : state_(std::make_unique<detail::ShardedState>(std::move(devices))) {
  detail::ShardedState& s = *state_;
  for (std::size_t i = 0; i < s.set.size(); ++i) s.dbs.push_back(std::make_unique<KernelDatabase>(s.set.open(i)));
  s.stats.items.assign(s.set.size(), 0);
  s.stats.last_shares.assign(s.set.size(), 0);
}

ShardedDatabase::~ShardedDatabase() = default;

void ShardedDatabase::add(const std::string& id, PlanFactory factory, PlanStability stability) {
  if (!factory)
    fail(ErrorCategory::invalid_argument, std::string(kWho) + "::add('" + id + "') got an empty factory.",
         "pass a PlanFactory that returns the kernel's plan for (DeviceInfo, Shape).");
  for (auto& db : state_->dbs) db->add(id, factory, stability);
  std::lock_guard lock(state_->mutex);
  state_->added.insert(id);
  state_->left_out.erase(id);  // a new registration gets every device back
}

void ShardedDatabase::call(const std::string& id, const Shape& shape, std::span<const TensorArg> args) {
  detail::ShardedState& s = *state_;
  s.check(id, shape);
  // One item: split_by_weight gives it to the largest weight (ties: the earlier device).
  s.run(
      id, shape, 1,
      [&](KernelDatabase& db, std::uint32_t, std::uint32_t, std::uint32_t& done) {
        db.call(id, shape, args);
        done = 1;
      },
      &MultiStats::unsplit, false);
}

void ShardedDatabase::call_batch(const std::string& id, const Shape& shape, std::uint32_t count,
                                 const ArgsOf& args_of) {
  detail::ShardedState& s = *state_;
  s.check(id, shape);
  if (count == 0) return;
  if (!args_of)
    fail(ErrorCategory::invalid_argument, std::string(kWho) + "::call_batch('" + id + "') got an empty args_of.",
         "pass a function that returns call i's TensorArgs.");
  s.run(
      id, shape, count,
      [&](KernelDatabase& db, std::uint32_t begin, std::uint32_t end, std::uint32_t& done) {
        for (std::uint32_t i = begin; i < end; ++i, ++done) {
          const std::vector<TensorArg> args = args_of(i);
          db.call(id, shape, args);
        }
      },
      &MultiStats::batches, true);
}

void ShardedDatabase::spread(const std::string& id, const Shape& weight_shape, std::uint32_t count,
                             const RangeWork& work) {
  detail::ShardedState& s = *state_;
  s.check(id, weight_shape);
  if (count == 0) return;
  s.run(id, weight_shape, count, work, &MultiStats::splits, true);
}

std::vector<double> ShardedDatabase::weights(const std::string& id, const Shape& shape) const {
  state_->check(id, shape);
  return state_->weights(id, shape);
}

const DeviceSet& ShardedDatabase::devices() const noexcept { return state_->set; }

KernelDatabase& ShardedDatabase::database(std::size_t i) {
  if (i >= state_->dbs.size())
    fail(ErrorCategory::invalid_argument,
         std::string(kWho) + "::database(" + std::to_string(i) + ") is past the set's " +
             std::to_string(state_->dbs.size()) + " devices.",
         "pass an index below devices().size().");
  return *state_->dbs[i];
}

std::uint64_t ShardedDatabase::hits() const {
  std::uint64_t sum = 0;
  for (const auto& db : state_->dbs) sum += db->hits();
  return sum;
}

std::uint64_t ShardedDatabase::misses() const {
  std::uint64_t sum = 0;
  for (const auto& db : state_->dbs) sum += db->misses();
  return sum;
}

std::uint64_t ShardedDatabase::evictions() const {
  std::uint64_t sum = 0;
  for (const auto& db : state_->dbs) sum += db->evictions();
  return sum;
}

MultiStats ShardedDatabase::stats() const {
  std::lock_guard lock(state_->mutex);
  return state_->stats;
}

std::string ShardedDatabase::report() const {
  const MultiStats s = stats();
  std::string r = std::string(kWho) + ": " + std::to_string(state_->set.size()) + " devices, " +
                  std::to_string(hits()) + " hits, " + std::to_string(misses()) + " compiles, " +
                  std::to_string(s.failures) + " failures";
  if (const std::uint64_t e = evictions(); e != 0) r += ", " + std::to_string(e) + " evictions";
  return r;
}

}  // namespace vgpu
