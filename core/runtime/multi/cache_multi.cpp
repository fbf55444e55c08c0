// SPDX-License-Identifier: Apache-2.0
// core/runtime/multi/cache_multi.cpp — Cache over a DeviceSet: sharded batches and row-split matmul through
// a ShardedDatabase (the one engine that spreads, core/runtime/multi/spread.cpp; docs/scale-out.md).
#include <atomic>

#include "vgpu/cache.hpp"
#include "vgpu/error.hpp"
#include "vgpu/runtime.hpp"
#include "vgpu/sharded_database.hpp"

namespace vgpu {

namespace detail {
void check_matmul_operands(const Matrix& a, const Matrix& b);  // core/runtime/kernel_cache/cache.cpp
}  // namespace detail

struct Cache::Multi {
  explicit Multi(DeviceSet devices) : db(std::move(devices)) {}

  ShardedDatabase db;  // one KernelDatabase per device; spreads batches and splits
  std::atomic<std::uint64_t> split_min_work{kSplitMinWork};
  // matmul calls below split_min_work run on the set's first device, outside the spread engine.
  std::atomic<std::uint64_t> unsplit{0}, unsplit_rows{0};
};

// Here, not in cache.cpp: constructors need Multi complete (to destroy multi_ if they throw).
Cache::Cache() : db_(Runtime::global()) {}

Cache::Cache(Device device) : db_(std::move(device)) {}

// db_ keeps device 0 for device(); over a set every call goes through multi_->db.
Cache::Cache(DeviceSet devices) : db_(devices.open(0)), multi_(std::make_unique<Multi>(std::move(devices))) {}

Cache::~Cache() = default;

void Cache::matmul(const float* a, const float* b, float* c, std::uint32_t m, std::uint32_t k, std::uint32_t n,
                   ops::Precision precision) {
  const std::string op = ops::matmul_op(precision);
  if (multi_ && multi_->db.devices().size() > 1 && m > 1 &&
      std::uint64_t{m} * k * n >= multi_->split_min_work.load(std::memory_order_relaxed)) {
    multi_->db.spread(
        op, {m, k, n}, m, [&](KernelDatabase& db, std::uint32_t begin, std::uint32_t end, std::uint32_t& done) {
          const std::uint32_t rows = end - begin;  // rows [begin, end) of C from those of A; B whole
          const TensorArg args[] = {TensorArg(a + std::size_t{begin} * k, {rows, k}), TensorArg(b, {k, n}),
                                    TensorArg(c + std::size_t{begin} * n, {rows, n})};
          db.call(op, {rows, k, n}, args);
          done = rows;
        });
    return;
  }
  const TensorArg args[] = {TensorArg(a, {m, k}), TensorArg(b, {k, n}), TensorArg(c, {m, n})};
  (multi_ ? multi_->db.database(0) : db_).call(op, {m, k, n}, args);
  if (multi_) {
    multi_->unsplit.fetch_add(1, std::memory_order_relaxed);
    multi_->unsplit_rows.fetch_add(m, std::memory_order_relaxed);
  }
}

std::vector<Matrix> Cache::matmul_batch(const std::vector<std::pair<Matrix, Matrix>>& pairs, ops::Precision precision) {
  const std::string op = ops::matmul_op(precision);
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
  auto args_of = [&](std::size_t i) {
    return std::vector<TensorArg>{TensorArg(pairs[i].first.data.data(), {m, k}),
                                  TensorArg(pairs[i].second.data.data(), {k, n}),
                                  TensorArg(out[i].data.data(), {m, n})};
  };
  if (!multi_) {
    for (std::size_t i = 0; i < pairs.size(); ++i) db_.call(op, {m, k, n}, args_of(i));
    return out;
  }
  if (pairs.size() > UINT32_MAX)
    fail(ErrorCategory::invalid_argument, "matmul_batch: " + std::to_string(pairs.size()) + " pairs is too many.",
         "split the batch into parts of at most 2^32-1 pairs.");
  multi_->db.call_batch(op, {m, k, n}, static_cast<std::uint32_t>(pairs.size()), args_of);
  return out;
}

std::uint64_t Cache::compiles() const { return db_.misses() + (multi_ ? multi_->db.misses() : 0); }

std::uint64_t Cache::hits() const { return db_.hits() + (multi_ ? multi_->db.hits() : 0); }

std::size_t Cache::size() const {
  std::size_t n = db_.size();
  if (multi_)
    for (std::size_t i = 0; i < multi_->db.devices().size(); ++i) n += multi_->db.database(i).size();
  return n;
}

std::uint64_t Cache::buffer_bytes() const {
  std::uint64_t n = db_.buffer_bytes();
  if (multi_)
    for (std::size_t i = 0; i < multi_->db.devices().size(); ++i) n += multi_->db.database(i).buffer_bytes();
  return n;
}

std::uint64_t Cache::evictions() const { return db_.evictions() + (multi_ ? multi_->db.evictions() : 0); }

const DeviceSet* Cache::devices() const noexcept { return multi_ ? &multi_->db.devices() : nullptr; }

MultiStats Cache::multi_stats() const {
  if (!multi_) return {};
  MultiStats s = multi_->db.stats();  // batches and splits are the database's call_batch and spread calls
  s.unsplit = multi_->unsplit.load(std::memory_order_relaxed);
  s.items[0] += multi_->unsplit_rows.load(std::memory_order_relaxed);
  return s;
}

void Cache::set_split_min_work(std::uint64_t work) noexcept {
  if (multi_) multi_->split_min_work.store(work, std::memory_order_relaxed);
}

std::uint64_t Cache::split_min_work() const noexcept {
  return multi_ ? multi_->split_min_work.load(std::memory_order_relaxed) : kSplitMinWork;
}

}  // namespace vgpu
