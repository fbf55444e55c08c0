// SPDX-License-Identifier: Apache-2.0
// vgpu/cache/memory_cache.hpp — L1: the bounded, single-flight, in-RAM cache of live kernels.
#pragma once

#include <cstdint>
#include <exception>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>

#include "vgpu/error.hpp"
#include "vgpu/single_flight.hpp"

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
    if (auto it = entries_.find(key); it != entries_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.lru_pos);
      ++stats_.hits;
      return {it->second.value, Lookup::hit};
    }
    if (building_.state(key) != FlightState::none) {
      // Another thread is building this key (a build asking for its own key is the caller's
      // bug, refused by wait()): its value, or its exception.
      ++stats_.joined;
      return {building_.wait(lock, key), Lookup::joined};
    }
    ++stats_.misses;
    Value made = building_.run(lock, key, std::forward<Build>(build), [&](Value* value, const std::exception_ptr&) {
      if (!value) {
        ++stats_.failures;  // not cached: a later call builds again
        return;
      }
      ++stats_.builds;
      lru_.push_front(key);
      entries_.emplace(key, Entry{*value, lru_.begin()});
      evict_over_capacity_locked();
    });
    return {std::move(made), Lookup::built};
  }

  /// Returns the value for key if present (counts as a hit), else nothing.
  std::optional<Value> find(const Key& key) {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return std::nullopt;
    lru_.splice(lru_.begin(), lru_, it->second.lru_pos);
    ++stats_.hits;
    return it->second.value;
  }

  /// Drops key if present and built; returns whether it was dropped.
  bool erase(const Key& key) {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return false;
    lru_.erase(it->second.lru_pos);
    entries_.erase(it);
    return true;
  }

  /// Drops every built value (builds in flight finish and are kept).
  void clear() {
    std::lock_guard lock(mutex_);
    entries_.clear();
    lru_.clear();
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
  struct Entry {
    Value value;
    typename std::list<Key>::iterator lru_pos;
  };

  void evict_over_capacity_locked() {
    // From the least recently used end (builds in flight are not entries yet).
    while (entries_.size() > capacity_) {
      entries_.erase(lru_.back());
      lru_.pop_back();
      ++stats_.evictions;
    }
  }

  mutable std::mutex mutex_;
  SingleFlight<Key, Value, Hash> building_;  // builds in progress
  std::unordered_map<Key, Entry, Hash> entries_;
  std::list<Key> lru_;  // front = most recently used
  std::size_t capacity_;
  MemoryCacheStats stats_;
};

}  // namespace vgpu::cache
