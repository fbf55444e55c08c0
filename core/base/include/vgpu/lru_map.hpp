// SPDX-License-Identifier: Apache-2.0
// vgpu/lru_map.hpp — the one least-recently-used map behind every cache of live persistent
// objects: KernelDatabase's kernels (so Cache's and ShardedDatabase's), vgpu::run's queue
// pipelines and the Python module's queue sets. Bounded by count and by the device memory the
// objects' buffers hold (issue 29: one kernel per shape, kept forever, exhausted device memory).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace vgpu {

/// Bounds on the live persistent objects (kernels with their buffers, queue pipelines) one cache
/// keeps: at most `count` of them, whose buffers hold at most `bytes` of device memory. The
/// defaults (VGPU_PERSISTENT_CAPACITY, VGPU_PERSISTENT_MAX_BYTES; docs/embedding.md) keep a loop
/// over dozens of shapes fully cached while bounding what a stream of distinct shapes holds.
/// A plain value.
struct PersistentLimits {
  /// Default count: 64 objects. A steady loop rarely cycles through more shapes (batch sizes
  /// bucketed by powers of two give ~20), and 64 kernels of the 512-wide matmuls hold
  /// ~200 MiB where the unbounded cache had grown past 1 GiB.
  static constexpr std::size_t kDefaultCount = 64;
  /// Default bytes: 1 GiB, small beside any GPU vgpu targets and host RAM (the CPU backend's
  /// buffers), yet 5 distinct 4096² matmuls (192 MiB each) stay cached. One object larger than
  /// the bound is still kept, alone.
  static constexpr std::uint64_t kDefaultBytes = std::uint64_t{1} << 30;
  /// The largest count accepted (as VGPU_L1_CAPACITY's).
  static constexpr std::size_t kMaxCount = std::size_t{1} << 20;

  std::size_t count = kDefaultCount;    ///< live objects at most (1 ... kMaxCount)
  std::uint64_t bytes = kDefaultBytes;  ///< bytes of their buffers at most (≥ 1)
};

/// A map from Key to Value that remembers the order of use and evicts the least recently used
/// entries once there are more than PersistentLimits::count of them or their bytes (each
/// entry's, as the caller states it) sum past PersistentLimits::bytes. The most recently put or
/// resized entry is never evicted, so one entry larger than the byte bound is still kept, alone.
/// Evicting only hands the values back: a value shared elsewhere (a shared_ptr in use by another
/// thread) stays alive until its last user lets it go. Values handed back are the caller's to
/// destroy, typically after releasing its lock (destroying a kernel may wait for its device).
/// Thread-safety: none of its own; the owner's lock guards every call (not even const members
/// may run beside a non-const one).
template <class Key, class Value, class Hash = std::hash<Key>>
class LruMap {
 public:
  /// Creates an empty map bounded by limits (a count or bytes of 0 counts as 1).
  explicit LruMap(PersistentLimits limits = {}) { limits_ = clamp(limits); }

  /// Returns key's value, marked most recently used, or null.
  Value* find(const Key& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->value;
  }
  /// Returns key's value without marking it used, or null.
  Value* peek(const Key& key) {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &it->second->value;
  }
  /// Puts value under key as the most recently used entry, holding bytes (replacing an earlier
  /// value of key, handed back first), then evicts beyond the limits; returns what it dropped.
  std::vector<Value> put(const Key& key, Value value, std::uint64_t bytes) {
    std::vector<Value> dropped;
    if (std::optional<Value> old = take(key)) dropped.push_back(std::move(*old));
    order_.push_front(Node{key, std::move(value), bytes});
    try {
      index_.emplace(key, order_.begin());
    } catch (...) {
      order_.pop_front();
      throw;
    }
    bytes_ += bytes;
    evict_over(dropped);
    return dropped;
  }
  /// Sets the bytes key's value holds (its buffers grew) and marks it most recently used, then
  /// evicts beyond the limits; returns the evicted values (none when key is absent).
  std::vector<Value> resize(const Key& key, std::uint64_t bytes) {
    std::vector<Value> dropped;
    auto it = index_.find(key);
    if (it == index_.end()) return dropped;
    order_.splice(order_.begin(), order_, it->second);
    bytes_ = bytes_ - it->second->bytes + bytes;
    it->second->bytes = bytes;
    evict_over(dropped);
    return dropped;
  }
  /// Removes key and returns its value (not counted as an eviction), or nothing.
  std::optional<Value> take(const Key& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return std::nullopt;
    std::optional<Value> out(std::move(it->second->value));
    bytes_ -= it->second->bytes;
    order_.erase(it->second);
    index_.erase(it);
    return out;
  }
  /// Removes every entry pred(key, value) picks, returning their values (not counted as evictions).
  template <class Pred>
  std::vector<Value> erase_if(Pred&& pred) {
    std::vector<Value> out;
    for (auto it = order_.begin(); it != order_.end();) {
      if (pred(std::as_const(it->key), std::as_const(it->value))) {
        out.push_back(std::move(it->value));
        bytes_ -= it->bytes;
        index_.erase(it->key);
        it = order_.erase(it);
      } else {
        ++it;
      }
    }
    return out;
  }
  /// Changes the limits (a count or bytes of 0 counts as 1), evicting beyond them; returns the evicted values.
  std::vector<Value> set_limits(PersistentLimits limits) {
    limits_ = clamp(limits);
    std::vector<Value> dropped;
    evict_over(dropped);
    return dropped;
  }
  /// Calls f(key, value) for every entry, most recently used first.
  template <class F>
  void for_each(F&& f) const {
    for (const Node& n : order_) f(n.key, n.value);
  }

  /// Returns the number of entries.
  std::size_t size() const noexcept { return index_.size(); }
  /// Returns whether there is no entry.
  bool empty() const noexcept { return index_.empty(); }
  /// Returns the sum of the entries' bytes.
  std::uint64_t bytes() const noexcept { return bytes_; }
  /// Returns how many entries the limits evicted so far (take, erase_if and replacing do not count).
  std::uint64_t evictions() const noexcept { return evictions_; }
  /// Returns the limits.
  const PersistentLimits& limits() const noexcept { return limits_; }

 private:
  struct Node {
    Key key;
    Value value;
    std::uint64_t bytes = 0;
  };

  static PersistentLimits clamp(PersistentLimits l) noexcept {
    if (l.count == 0) l.count = 1;
    if (l.bytes == 0) l.bytes = 1;
    return l;
  }
  // Evicts from the least recently used end while a limit is passed, keeping the front entry.
  void evict_over(std::vector<Value>& dropped) {
    while (index_.size() > 1 && (index_.size() > limits_.count || bytes_ > limits_.bytes)) {
      Node& last = order_.back();
      dropped.push_back(std::move(last.value));
      bytes_ -= last.bytes;
      index_.erase(last.key);
      order_.pop_back();
      ++evictions_;
    }
  }

  std::list<Node> order_;  // front: the most recently used
  std::unordered_map<Key, typename std::list<Node>::iterator, Hash> index_;
  std::uint64_t bytes_ = 0;
  std::uint64_t evictions_ = 0;
  PersistentLimits limits_;
};

}  // namespace vgpu
