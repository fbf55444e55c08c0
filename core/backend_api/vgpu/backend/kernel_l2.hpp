// vgpu/backend/kernel_l2.hpp — one compiled kernel's L2 entry as a backend uses it: load,
// reject what the backend cannot use, store a fresh build, and count each outcome in the
// device's counters the same way on every backend (l2_hits, l2_misses, l2_rejected,
// l2_writes). Backend-author interface.
// Thread-safety: a plain value used by one compile call; DiskStore::global() and the counters
// are safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "vgpu/cache/disk_store.hpp"
#include "vgpu/counters.hpp"
#include "vgpu/device_info.hpp"

namespace vgpu {

/// The L2 entry of kind under key for the device fingerprint fp (a view: fp must outlive it).
class KernelL2Entry {
 public:
  KernelL2Entry(Counters& counters, cache::EntryKind kind, const cache::KernelKey& key, const DeviceFingerprint& fp)
      : counters_(counters), kind_(kind), key_(key), fp_(fp) {}

  /// Returns whether the store is on (VGPU_CACHE_DISABLE and an unusable directory turn it off).
  bool enabled() const noexcept { return cache::DiskStore::global().enabled(); }

  /// Returns the stored payload, or nothing (counting a miss, or a rejection when the store
  /// dropped a damaged entry). The caller then counts hit() or calls reject().
  std::optional<std::vector<std::uint8_t>> load() {
    cache::LoadOutcome outcome = cache::LoadOutcome::missing;
    auto payload = cache::DiskStore::global().load(kind_, key_, fp_, &outcome);
    if (!payload)
      (outcome == cache::LoadOutcome::rejected ? counters_.l2_rejected : counters_.l2_misses)
          .fetch_add(1, std::memory_order_relaxed);
    return payload;
  }

  /// Counts a loaded payload the backend used.
  void hit() noexcept { counters_.l2_hits.fetch_add(1, std::memory_order_relaxed); }

  /// Deletes the entry because its payload was unusable (reason: "driver", "not SPIR-V", ...)
  /// and counts the rejection; the caller then builds from source.
  void reject(std::string_view reason) {
    cache::DiskStore::global().reject(kind_, key_, reason);
    counters_.l2_rejected.fetch_add(1, std::memory_order_relaxed);
  }

  /// Stores payload, which took cost_us to build, counting the write when it happened.
  void store(std::span<const std::uint8_t> payload, std::uint64_t cost_us) {
    auto& store = cache::DiskStore::global();
    if (store.enabled() && store.store(kind_, key_, fp_, payload, cost_us))
      counters_.l2_writes.fetch_add(1, std::memory_order_relaxed);
  }

 private:
  Counters& counters_;
  cache::EntryKind kind_;
  cache::KernelKey key_;
  const DeviceFingerprint& fp_;
};

}  // namespace vgpu
