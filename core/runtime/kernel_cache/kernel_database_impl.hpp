// SPDX-License-Identifier: Apache-2.0
// core/runtime/kernel_cache/kernel_database_impl.hpp — the state and work of a KernelDatabase
// (vgpu/kernel_database.hpp), kept out of the public header so that the exported class's
// layout is one pointer (a stable ABI) and its maps, flights and locks are no one else's.
// Internal to the runtime.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "vgpu/device.hpp"
#include "vgpu/kernel_database.hpp"
#include "vgpu/kernel_plan.hpp"
#include "vgpu/lru_map.hpp"
#include "vgpu/persistent_kernel.hpp"
#include "vgpu/single_flight.hpp"

namespace vgpu::detail {

/// What KernelDatabase forwards to: each public member means what the one of the same name
/// there says. Thread-safety: as KernelDatabase's (every member safe from several threads).
class KernelDatabaseImpl {
 public:
  /// As KernelDatabase(Device).
  explicit KernelDatabaseImpl(Device device);
  /// As KernelDatabase(Runtime&).
  explicit KernelDatabaseImpl(Runtime& runtime);
  /// As KernelDatabase().
  KernelDatabaseImpl();

  /// KernelDatabase::add.
  void add(const std::string& id, PlanFactory factory, PlanStability stability = PlanStability::varies);
  /// KernelDatabase::get.
  std::shared_ptr<PersistentKernel> get(const std::string& id, const Shape& shape);
  /// KernelDatabase::call.
  void call(const std::string& id, const Shape& shape, std::span<const TensorArg> args);
  /// KernelDatabase::hits.
  std::uint64_t hits() const;
  /// KernelDatabase::misses.
  std::uint64_t misses() const;
  /// KernelDatabase::interim_calls.
  std::uint64_t interim_calls() const;
  /// KernelDatabase::size.
  std::size_t size() const;
  /// KernelDatabase::buffer_bytes.
  std::uint64_t buffer_bytes() const;
  /// KernelDatabase::evictions.
  std::uint64_t evictions() const;
  /// KernelDatabase::limits.
  PersistentLimits limits() const;
  /// KernelDatabase::set_limits.
  void set_limits(PersistentLimits limits);
  /// KernelDatabase::report.
  std::string report() const;
  /// KernelDatabase::evict(id).
  void evict(const std::string& id);
  /// KernelDatabase::evict().
  void evict();
  /// KernelDatabase::device.
  Device device() const;
  /// KernelDatabase::selects.
  bool selects() const noexcept { return runtime_ != nullptr; }

 private:
  struct Factory {
    PlanFactory make;
    PlanStability stability = PlanStability::varies;
    std::uint64_t generation = 0;  // bumped by add() and evict(): a build begun before is not kept
  };
  struct Entry {
    std::string id;
    Shape shape;  // checked on a keyed hit (the key is a hash)
    std::uint64_t device_key = 0;
    std::shared_ptr<PersistentKernel> kernel;
  };
  // With selection: the device chosen per (id, shape), valid while the runtime's epoch holds.
  struct Chosen {
    std::string id;
    Shape shape;
    Device device;
    std::uint64_t device_key = 0;
    std::uint64_t epoch = 0;
    bool interim = false;  // a ready device serving while the choice is measured in the background
  };
  // Declared before a method's lock: frees what the method dropped once the lock is released.
  struct FreeDropped {
    const KernelDatabaseImpl& db;
    ~FreeDropped();
  };

  void register_builtins();
  // Keeps what the caller took out of the maps until the lock is released (see FreeDropped).
  void drop_locked(std::shared_ptr<const void> held) const;
  void drop_locked(Device device) const;
  void drop_locked(PlanFactory factory) const;
  // Erases the kernels pred picks, dropping them (lock held).
  template <class Pred>
  void erase_kernels_locked(Pred pred);
  // Drops kernels the bounds evicted and counts them on their devices (lock held).
  void drop_evicted_locked(std::vector<Entry> evicted);
  // get() that also says the device it used or was building on (for call()'s demotion).
  std::shared_ptr<PersistentKernel> lookup(const std::string& id, const Shape& shape, Device* used);
  // The factory registered under id; throws invalid_argument (listing the ids) when none is.
  const Factory& factory_locked(const std::string& id) const;
  // Waits (releasing lock) for the flight running for key in flights; returns its value or
  // rethrows its error. Throws instead when this thread runs it (a factory asking for its own
  // kernel would wait for itself forever).
  template <class Flights>
  auto join_locked(std::unique_lock<std::mutex>& lock, Flights& flights, std::uint64_t key, const std::string& id,
                   const Shape& shape);
  // Runs Runtime::select for (id, shape) outside the lock, once, and records the choice.
  void select_locked(std::unique_lock<std::mutex>& lock, std::uint64_t slot, const std::string& id, const Shape& shape,
                     std::uint64_t epoch, Device* used);
  // Builds the kernel for key outside the lock, once; plan: made by this call already (varies)
  // or null (fixed: made here, by f).
  std::shared_ptr<PersistentKernel> build_locked(std::unique_lock<std::mutex>& lock, std::uint64_t key,
                                                 const std::string& id, const Shape& shape, const Device& device,
                                                 std::uint64_t device_key, const Factory& f,
                                                 std::unique_ptr<KernelPlan> plan);

  Runtime* runtime_ = nullptr;  // selection on; null: device_ is fixed
  Device device_;
  std::uint64_t device_key_ = 0;  // device_'s key (fixed device only)
  mutable std::mutex mutex_;
  std::map<std::string, Factory> factories_;
  std::uint64_t generation_ = 0;
  // key: for fixed factories a hash of (id, shape, device); for varies ones a hash of id,
  // device, shape and the plan's content. Only built kernels; builds in flight are in flights_.
  // Bounded by count and by the kernels' buffer bytes (least recently used out).
  LruMap<std::uint64_t, Entry> kernels_;
  SingleFlight<std::uint64_t, std::shared_ptr<PersistentKernel>> flights_;  // builds in progress
  std::uint64_t hits_ = 0, misses_ = 0, interim_calls_ = 0;
  // key: hash of (id, shape). Bounded too (kChosenPerKernel × the kernel count): a choice
  // dropped is only asked of the runtime again (its size class's choice is kept there).
  LruMap<std::uint64_t, Chosen> chosen_;
  SingleFlight<std::uint64_t> selecting_;                     // selections in progress, by (id, shape)
  mutable std::vector<std::shared_ptr<const void>> dropped_;  // freed by FreeDropped, outside the lock
  mutable std::atomic<bool> has_dropped_{false};
};

}  // namespace vgpu::detail
