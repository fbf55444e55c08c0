// SPDX-License-Identifier: Apache-2.0
// vgpu/backend/kernel_l2.hpp — one compiled kernel's L2 entry as a backend uses it: load,
// reject what the backend cannot use, store a fresh build, and count each outcome in the
// device's counters the same way on every backend (l2_hits, l2_misses, l2_rejected,
// l2_writes). Backend-author interface.
// Thread-safety: a plain value used by one compile call; the store (the device's runtime's,
// DeviceImpl::l2_store()) and the counters are safe from any thread.
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

/// The L2 entry of kind under key for the device fingerprint fp in store (a view: store and fp
/// must outlive it).
class KernelL2Entry {
 public:
  KernelL2Entry(Counters& counters, cache::DiskStore& store, cache::EntryKind kind, const cache::KernelKey& key,
                const DeviceFingerprint& fp)
      : counters_(counters), store_(store), kind_(kind), key_(key), fp_(fp) {}

  /// Returns whether the store is on (turned off by the runtime's settings or an unusable directory).
  bool enabled() const noexcept { return store_.enabled(); }

  /// Returns the stored payload, or nothing (counting a miss, or a rejection when the store
  /// dropped a damaged entry). The caller then counts hit() or calls reject().
  std::optional<std::vector<std::uint8_t>> load() {
    cache::LoadOutcome outcome = cache::LoadOutcome::missing;
    auto payload = store_.load(kind_, key_, fp_, &outcome);
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
    store_.reject(kind_, key_, reason);
    counters_.l2_rejected.fetch_add(1, std::memory_order_relaxed);
  }

  /// Stores payload, which took cost_us to build, under label (the kernel's name, for
  /// `vgpu-probe cache list`), counting the write when it happened.
  void store(std::span<const std::uint8_t> payload, std::uint64_t cost_us, std::string_view label) {
    if (store_.enabled() && store_.store(kind_, key_, fp_, payload, cost_us, label))
      counters_.l2_writes.fetch_add(1, std::memory_order_relaxed);
  }

 private:
  Counters& counters_;
  cache::DiskStore& store_;
  cache::EntryKind kind_;
  cache::KernelKey key_;
  const DeviceFingerprint& fp_;
};

}  // namespace vgpu
