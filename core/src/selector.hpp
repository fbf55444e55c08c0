// core/src/selector.hpp — the per-runtime table of device selections: lookup, calibration,
// persistence next to L2 and demotion (the behaviour vgpu/selection.hpp documents).
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "vgpu/device.hpp"
#include "vgpu/kernel_plan.hpp"
#include "vgpu/selection.hpp"

namespace vgpu {
class Runtime;
}

namespace vgpu::detail {

/// Chooses devices for (op, size class). Thread-safety: every member is safe to call from
/// several threads; calibrations run one at a time (they time devices, so running two at once
/// would spoil both), lookups of known classes never wait for one.
class Selector {
 public:
  /// Selects among runtime's devices; forced is VGPU_DEVICE's id (or empty).
  Selector(Runtime& runtime, std::string forced) : runtime_(runtime), forced_(std::move(forced)) {}

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
  // Returns the entry for key, loading it from the disk or calibrating when absent.
  Entry& entry_locked(const std::string& key, const std::string& op, const Shape& shape, const PlanFactory& factory);
  // Times every eligible device at shape, except the demoted ones (listed last, not run), and
  // orders the candidates, fastest first.
  Selection calibrate(const std::string& op, const Shape& shape, const PlanFactory& factory,
                      const std::set<std::string>& demoted = {});

  Runtime& runtime_;
  std::string forced_;
  std::mutex mutex_;  // guards entries_; held through a calibration
  std::map<std::string, Entry> entries_;  // by "op#size_class"
  std::atomic<std::uint64_t> epoch_{0};
};

/// The selection-cache key text for op's size class on exactly these devices (their ids and
/// fingerprints, sorted); exposed for the tests of persistence.
std::string selection_key_text(const std::string& op, std::uint32_t size_class, const std::vector<DeviceInfo>& devices);

}  // namespace vgpu::detail
