// SPDX-License-Identifier: Apache-2.0
// core/src/selection_service.hpp — device selection as a service of its own: the table of
// choices per (op, size class), its lookup, calibration (calibration.hpp), persistence next to
// L2 (selection_store.hpp) and demotion — the behaviour vgpu/selection.hpp documents.
// Runtime holds one and forwards select/explain/demote/selection_epoch to it; KernelDatabase
// (and through it Cache) reaches it through those. It sits above Runtime (it builds
// PersistentKernels to time devices) and sees the runtime only through a DeviceSource.
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "calibration.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/device.hpp"
#include "vgpu/kernel_plan.hpp"
#include "vgpu/selection.hpp"

namespace vgpu::detail {

/// Chooses devices for (op, size class). Thread-safety: every member is safe to call from
/// several threads. The service's mutex guards only its table and the calibrations in flight:
/// loading a selection from disk and calibrating (which runs the user's factory, builds and
/// times PersistentKernels) happen without it, once per (op, size class) — single flight:
/// concurrent first calls for one class wait for that calibration, lookups of known classes
/// and calibrations of other classes go on. So a factory may select another op (a calibration
/// nested in a calibration); asking for the very class being calibrated on the same thread
/// throws invalid_argument instead of waiting for itself. Calibrations take turns at their
/// timed phases (calibration::TimingTurns, a bounded wait), since two timing at once would
/// spoil each other's times.
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
  // One load or calibration in progress; the threads that need its result wait on done_.
  struct Flight {
    std::thread::id runner = std::this_thread::get_id();
    bool finished = false;
    std::exception_ptr error;
  };
  // The selection VGPU_DEVICE forces (no table, no timing).
  Selection forced_selection(const std::string& op, const Shape& shape);
  // Finds the selection for op's class at shape without the lock: loaded from the disk, or
  // calibrated (again, without the demoted devices, when recalibrating).
  Selection find_out(const std::string& op, const Shape& shape, const PlanFactory& factory, std::uint64_t work,
                     bool recalibrate, const std::set<std::string>& demoted);
  // Returns the sound selection stored for key_text among the devices with these ids, or
  // nothing (a bad one is dropped).
  std::optional<Selection> load(const std::string& key_text, const std::string& op, std::uint32_t size_class,
                                const std::vector<std::string>& devices);
  // Follows the pointer to op's size class's last persisted selection, probing only the chosen
  // device's backend; nothing when there is none or it may be stale (the caller enumerates).
  std::optional<Selection> follow_last(const std::string& op, std::uint32_t size_class);
  // Points op's size class at the selection persisted under key_text, which chose device.
  void remember_last(const std::string& op, std::uint32_t size_class, const std::string& key_text,
                     const std::string& device);

  DeviceSource source_;
  std::string forced_;
  std::shared_ptr<cache::DiskStore> store_;
  std::mutex mutex_;  // guards entries_ and flights_ only; never held while loading or calibrating
  std::condition_variable done_;  // a flight finished
  std::map<std::string, Entry> entries_;                   // by "op#size_class"
  std::map<std::string, std::shared_ptr<Flight>> flights_;  // by the same key
  calibration::TimingTurns turns_;
  std::atomic<std::uint64_t> epoch_{0};
};

/// The selection-cache key text for op's size class on exactly these devices (their ids and
/// fingerprints, sorted); exposed for the tests of persistence.
std::string selection_key_text(const std::string& op, std::uint32_t size_class, const std::vector<DeviceInfo>& devices);

}  // namespace vgpu::detail
