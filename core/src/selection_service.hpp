// core/src/selection_service.hpp — device selection as a service of its own: the table of
// choices per (op, size class), its lookup, calibration (calibration.hpp), persistence next to
// L2 (selection_store.hpp) and demotion — the behaviour vgpu/selection.hpp documents.
// Runtime holds one and forwards select/explain/demote/selection_epoch to it; KernelDatabase
// (and through it Cache) reaches it through those. It sits above Runtime (it builds
// PersistentKernels to time devices) and sees the runtime only through a DeviceSource.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "calibration.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/device.hpp"
#include "vgpu/kernel_plan.hpp"
#include "vgpu/selection.hpp"

namespace vgpu::detail {

/// Chooses devices for (op, size class). Thread-safety: every member is safe to call from
/// several threads; calibrations run one at a time (they time devices, so running two at once
/// would spoil both), lookups of known classes never wait for one.
class SelectionService {
 public:
  /// Selects among source's devices; forced is VGPU_DEVICE's id (or empty); selections persist
  /// in store (the runtime's L2 store).
  SelectionService(DeviceSource source, std::string forced, std::shared_ptr<cache::DiskStore> store)
      : source_(std::move(source)), forced_(std::move(forced)), store_(std::move(store)) {}

  /// Returns the selection for op at shape, calibrating or loading it on first use.
  Selection explain(const std::string& op, const Shape& shape, const PlanFactory& factory);
  /// Demotes device_id for op's size class at shape; false when no candidate is left.
  bool demote(const std::string& op, const Shape& shape, const std::string& device_id, const std::string& reason);
  /// Returns how many demotions happened (selections only ever change through one).
  std::uint64_t epoch() const noexcept { return epoch_.load(std::memory_order_acquire); }

 private:
  struct Entry {
    Selection selection;           // as calibrated or loaded (source calibrated/persisted/only)
    std::set<std::string> demoted;  // devices that failed for this class in this process
    bool recalibrate = false;       // a device was demoted: measure the others again
  };
  // The selection VGPU_DEVICE forces (no table, no timing).
  Selection forced_selection(const std::string& op, const Shape& shape);
  // Returns the entry for op's class at shape, loading it from the disk or calibrating when absent.
  Entry& entry_locked(const std::string& op, const Shape& shape, const PlanFactory& factory);
  // Returns the sound selection stored for key_text, or nothing (a bad one is dropped).
  std::optional<Selection> load_locked(const std::string& key_text, const std::string& op, std::uint32_t size_class,
                                       const std::vector<DeviceInfo>& devices);

  DeviceSource source_;
  std::string forced_;
  std::shared_ptr<cache::DiskStore> store_;
  std::mutex mutex_;  // guards entries_; held through a calibration
  std::map<std::string, Entry> entries_;  // by "op#size_class"
  std::atomic<std::uint64_t> epoch_{0};
};

/// The selection-cache key text for op's size class on exactly these devices (their ids and
/// fingerprints, sorted); exposed for the tests of persistence.
std::string selection_key_text(const std::string& op, std::uint32_t size_class, const std::vector<DeviceInfo>& devices);

}  // namespace vgpu::detail
