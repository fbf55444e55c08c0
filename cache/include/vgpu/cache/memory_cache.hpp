// SPDX-License-Identifier: Apache-2.0
// vgpu/cache/memory_cache.hpp — L1: the bounded, single-flight, in-RAM cache of live kernels.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>

#include "vgpu/error.hpp"

namespace vgpu::cache {

/// How a lookup was answered.
enum class Lookup {
  hit,     ///< the value was already there
  joined,  ///< another thread was building it; this one waited for that build (single flight)
  built,   ///< this call built it
};

/// Counters of one MemoryCache. A plain value.
struct MemoryCacheStats {
  std::uint64_t hits = 0, joined = 0, misses = 0, builds = 0, failures = 0, evictions = 0;
  std::size_t size = 0, capacity = 0;
};

/// A bounded map from Key to Value with least-recently-used eviction and single-flight builds:
/// when N threads ask for one missing key at once, the builder runs once and all N get its
/// value (or its exception; a failed build is not cached, so a later call retries).
/// Evicting drops only the cache's reference; values still in use (shared_ptr) stay alive.
/// Thread-safety: every member function is safe to call from several threads at once; the
/// builder runs without the cache's lock held.
template <class Key, class Value, class Hash = std::hash<Key>>
class MemoryCache {
 public:
  /// Creates a cache holding at most capacity values (capacity ≥ 1).
  explicit MemoryCache(std::size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  /// Returns the value for key, calling build() to make it when absent (once across threads).
  template <class Build>
  std::pair<Value, Lookup> get_or_build(const Key& key, Build&& build) {
    std::unique_lock lock(mutex_);
    for (;;) {
      auto it = entries_.find(key);
      if (it == entries_.end()) break;
      Entry& entry = it->second;
      if (entry.value) {
        lru_.splice(lru_.begin(), lru_, entry.lru_pos);
        ++stats_.hits;
        return {*entry.value, Lookup::hit};
      }
      // Another thread is building this key: wait for its outcome, then look again.
      auto flight = entry.flight;
      ++stats_.joined;
      done_.wait(lock, [&] { return flight->finished; });
      if (flight->error) std::rethrow_exception(flight->error);
      if (flight->value) return {*flight->value, Lookup::joined};
    }
    ++stats_.misses;
    auto flight = std::make_shared<Flight>();
    lru_.push_front(key);
    entries_.emplace(key, Entry{std::nullopt, lru_.begin(), flight});
    lock.unlock();

    std::optional<Value> made;
    std::exception_ptr error;
    try {
      made.emplace(build());
    } catch (...) {
      error = std::current_exception();
    }

    lock.lock();
    auto it = entries_.find(key);
    if (error) {
      ++stats_.failures;
      lru_.erase(it->second.lru_pos);
      entries_.erase(it);
    } else {
      ++stats_.builds;
      it->second.value = *made;
      it->second.flight.reset();
      evict_over_capacity_locked();
    }
    flight->finished = true;
    flight->error = error;
    if (made) flight->value = *made;
    lock.unlock();
    done_.notify_all();
    if (error) std::rethrow_exception(error);
    return {std::move(*made), Lookup::built};
  }

  /// Returns the value for key if present (counts as a hit), else nothing.
  std::optional<Value> find(const Key& key) {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end() || !it->second.value) return std::nullopt;
    lru_.splice(lru_.begin(), lru_, it->second.lru_pos);
    ++stats_.hits;
    return it->second.value;
  }

  /// Drops key if present and built; returns whether it was dropped.
  bool erase(const Key& key) {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end() || !it->second.value) return false;
    lru_.erase(it->second.lru_pos);
    entries_.erase(it);
    return true;
  }

  /// Drops every built value (builds in flight finish and are kept).
  void clear() {
    std::lock_guard lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->second.value) {
        lru_.erase(it->second.lru_pos);
        it = entries_.erase(it);
      } else {
        ++it;
      }
    }
  }

  /// Changes the bound, evicting least-recently-used values beyond it.
  void set_capacity(std::size_t capacity) {
    std::lock_guard lock(mutex_);
    capacity_ = capacity == 0 ? 1 : capacity;
    evict_over_capacity_locked();
  }

  /// Returns a copy of the counters.
  MemoryCacheStats stats() const {
    std::lock_guard lock(mutex_);
    MemoryCacheStats s = stats_;
    s.size = entries_.size();
    s.capacity = capacity_;
    return s;
  }

 private:
  struct Flight {
    bool finished = false;
    std::optional<Value> value;
    std::exception_ptr error;
  };
  struct Entry {
    std::optional<Value> value;  // empty while a build is in flight
    typename std::list<Key>::iterator lru_pos;
    std::shared_ptr<Flight> flight;
  };

  void evict_over_capacity_locked() {
    // Walk from the least recently used end; entries still being built are never evicted.
    auto pos = lru_.end();
    while (entries_.size() > capacity_ && pos != lru_.begin()) {
      --pos;
      auto it = entries_.find(*pos);
      if (!it->second.value) continue;
      pos = lru_.erase(pos);
      entries_.erase(it);
      ++stats_.evictions;
    }
  }

  mutable std::mutex mutex_;
  std::condition_variable done_;
  std::unordered_map<Key, Entry, Hash> entries_;
  std::list<Key> lru_;  // front = most recently used
  std::size_t capacity_;
  MemoryCacheStats stats_;
};

}  // namespace vgpu::cache
