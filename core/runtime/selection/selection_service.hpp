// SPDX-License-Identifier: Apache-2.0
// core/runtime/selection/selection_service.hpp — device selection as a service of its own: the table of
// choices per (op, size class), its lookup, calibration (calibration.hpp), persistence next to
// L2 (selection_store.hpp) and demotion — the behaviour vgpu/selection.hpp documents.
// Runtime holds one and forwards select/explain/demote/selection_epoch to it; KernelDatabase
// (and through it Cache) reaches it through those. It never calls Runtime: it reaches devices
// through a DeviceSource over the runtime's DeviceCatalog (device/device_catalog.hpp), which
// both depend on, and builds PersistentKernels to time them.
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <optional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "background_worker.hpp"
#include "calibration.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/device.hpp"
#include "vgpu/kernel_plan.hpp"
#include "vgpu/selection.hpp"
#include "vgpu/single_flight.hpp"

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
/// spoil each other's times. Background calibrations (explain with interim_ok) run on the
/// service's BackgroundWorker, one at a time; the table holds an interim entry for their class
/// meanwhile, replaced (and the epoch bumped) when they finish. shutdown() (the Runtime's
/// destructor, or process exit) cancels them between their timed runs and joins the thread.
class SelectionService {
 public:
  /// Selects among source's devices; forced is VGPU_DEVICE's id (or empty); selections persist
  /// in store (the runtime's L2 store).
  SelectionService(DeviceSource source, std::string forced, std::shared_ptr<cache::DiskStore> store,
                   bool background = false)
      : source_(std::move(source)), forced_(std::move(forced)), store_(std::move(store)), background_(background) {}
  ~SelectionService() { shutdown(); }

  /// Returns the selection for op at shape, calibrating or loading it on first use; with
  /// interim_ok (and background on), a calibration runs in the background and an interim
  /// selection of a ready device is returned meanwhile.
  Selection explain(const std::string& op, const Shape& shape, const PlanFactory& factory, bool interim_ok = false);
  /// Calibrates op's class at shape again in the foreground (the current choice the incumbent),
  /// stores it and puts it in the table.
  Selection recalibrate(const std::string& op, const Shape& shape, const PlanFactory& factory);
  /// Waits until no background calibration is queued or running (false: timed out).
  bool settle(std::chrono::milliseconds timeout) { return worker_.wait_idle(timeout); }
  /// Returns the background calibration counts.
  BackgroundStats background_stats() const noexcept;
  /// Cancels the background calibrations and joins their thread (idempotent).
  void shutdown() noexcept { worker_.stop(); }
  /// Demotes device_id for op's size class at shape; false when no candidate is left.
  bool demote(const std::string& op, const Shape& shape, const std::string& device_id, const std::string& reason);
  /// Returns how many demotions happened (selections only ever change through one).
  std::uint64_t epoch() const noexcept { return epoch_.load(std::memory_order_acquire); }

 private:
  struct Entry {
    Selection selection;            // as calibrated or loaded (source calibrated/persisted/only)
    std::set<std::string> demoted;  // devices that failed for this class in this process
    bool recalibrate = false;       // a device was demoted: measure the others again
  };
  // The selection VGPU_DEVICE forces (no table, no timing).
  Selection forced_selection(const std::string& op, const Shape& shape);
  // Calibrates request on every device, and stores the result under key_text (and the pointer
  // to it) when it is worth storing.
  Selection calibrate_and_store(const calibration::Request& request, std::uint32_t size_class,
                                const std::string& key_text);
  // The device with this id, probing only its backend; nothing when it is not there.
  std::optional<DeviceInfo> find_device(const std::string& id);
  // The built-in plan factory for op when factory is empty, else factory.
  static PlanFactory factory_for(const std::string& op, const PlanFactory& factory);
  // The key text of op's size class on devices, with the hash of factory's plan sources.
  std::string full_key_text(const std::string& op, std::uint32_t size_class, const std::vector<DeviceInfo>& devices,
                            const PlanFactory& factory, const Shape& shape);
  // What following the pointer to a class's last selection found: the selection when it is
  // still sound (fresh), else the stored choice when that device is still here (incumbent) and
  // why it must be rechecked.
  struct Followed {
    std::optional<Selection> fresh;
    std::string incumbent;
    std::string why_stale;
  };
  // Finds the selection for op's class at shape without the lock: loaded from the disk, or
  // calibrated (again, without the demoted devices, when recalibrating). incumbent: nullopt
  // when the pointer has not been followed yet, else what following it found ("" for none).
  Selection find_out(const std::string& op, const Shape& shape, const PlanFactory& factory, std::uint64_t work,
                     bool recalibrate, const std::set<std::string>& demoted,
                     std::optional<std::string> incumbent = std::nullopt, const std::function<bool()>& cancelled = {});
  // The first step of a call that may be served in the interim: the fresh persisted selection,
  // or an interim one with its calibration posted to the worker, or (no ready device) the
  // calibration done here. job: the background calibration to post once the interim entry is in
  // the table (left empty otherwise).
  Selection begin(const std::string& key, const std::string& op, const Shape& shape, const PlanFactory& factory,
                  std::uint64_t work, BackgroundWorker::Job& job);
  // The interim selection of a ready device that can run op (the incumbent when given, else
  // the CPU), or nothing.
  std::optional<Selection> interim_selection(const std::string& op, const Shape& shape, const PlanFactory& factory,
                                             const Followed& followed);
  // Puts a background calibration's result (or failure) in the table.
  void finish_background(const std::string& key, std::optional<Selection> found, const std::string& error,
                         bool cancelled);
  // Returns the sound selection stored for key_text among the devices with these ids, or
  // nothing (a bad one is dropped).
  std::optional<Selection> load(const std::string& key_text, const std::string& op, std::uint32_t size_class,
                                const std::vector<std::string>& devices);
  // Follows the pointer to op's size class's last persisted selection, probing only the chosen
  // device's backend; nothing when there is none or it may be stale (the caller enumerates).
  Followed follow_last(const std::string& op, std::uint32_t size_class, const PlanFactory& factory);
  // Points op's size class at the selection persisted under key_text, which chose device (with
  // the hash of its plan there at shape, for a user's op).
  void remember_last(const std::string& op, std::uint32_t size_class, const std::string& key_text,
                     const std::string& device, const PlanFactory& factory, const Shape& shape);
  // The hash text of op's plan on info at shape ("builtin" for vgpu's own ops).
  std::string plan_hash_text(const std::string& op, const PlanFactory& factory, const DeviceInfo& info,
                             const Shape& shape);

  DeviceSource source_;
  std::string forced_;
  std::shared_ptr<cache::DiskStore> store_;
  std::mutex mutex_;                      // guards entries_ and flights_ only; never held while loading or calibrating
  std::map<std::string, Entry> entries_;  // by "op#size_class"
  SingleFlight<std::string> flights_;     // loads and calibrations in progress, by the same key
  calibration::TimingTurns turns_;
  std::atomic<std::uint64_t> epoch_{0};
  bool background_ = false;  // VGPU_BACKGROUND
  struct AtomicStats {
    std::atomic<std::uint64_t> interim{0}, rechecks{0}, finished{0}, switches{0}, failed{0}, cancelled{0};
  } stats_;
  BackgroundWorker worker_;  // last: destroyed (stopped) first
};

/// The selection-cache key text for op's size class on exactly these devices (their ids and
/// fingerprints, sorted), under this vgpu version and plan source hash text ("builtin" for
/// vgpu's own ops); exposed for the tests of persistence.
std::string selection_key_text(const std::string& op, std::uint32_t size_class, const std::vector<DeviceInfo>& devices,
                               const std::string& plan);

}  // namespace vgpu::detail
