// SPDX-License-Identifier: Apache-2.0
// vgpu/device_set.hpp — several devices of one process that a Cache spreads work over
// (docs/scale-out.md, "In one process").
#pragma once

#include "vgpu/export.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "vgpu/device.hpp"
#include "vgpu/device_info.hpp"
#include "vgpu/kernel_plan.hpp"

namespace vgpu {

class Runtime;

/// An ordered set of distinct devices of one Runtime, checked when it is made (each id names a
/// device the runtime found, none twice, at least one). Cache(DeviceSet) splits batches and large
/// matmuls across it in proportion to the devices' measured speed (shares()).
/// Thread-safety: a value that never changes after construction; every member is safe to call
/// from several threads at once (open() and shares() go through the thread-safe Runtime). The
/// runtime must outlive the set.
class VGPU_API DeviceSet {
 public:
  /// Makes the set of these "backend:index" ids of runtime, in this order; throws
  /// invalid_argument (with a Fix) for an empty list, a malformed or unknown id, or a duplicate.
  DeviceSet(Runtime& runtime, const std::vector<std::string>& ids);
  /// Makes the set of these ids of Runtime::global().
  explicit DeviceSet(const std::vector<std::string>& ids);

  /// Returns every device of runtime that keep accepts (all when keep is empty), in registry
  /// order; throws invalid_argument when none is left.
  static DeviceSet all(Runtime& runtime, const std::function<bool(const DeviceInfo&)>& keep = {});
  /// Returns the set VGPU_DEVICES names for runtime (its config()), or all() when it is unset.
  static DeviceSet from_config(Runtime& runtime);
  /// Returns from_config(Runtime::global()).
  static DeviceSet from_config();

  /// Returns how many devices the set holds (at least one).
  std::size_t size() const noexcept { return infos_.size(); }
  /// Returns the ids, "backend:index", in the set's order.
  std::vector<std::string> ids() const;
  /// Returns the devices' descriptions, in the set's order.
  const std::vector<DeviceInfo>& infos() const noexcept { return infos_; }
  /// Opens (or returns the runtime's already open) device i; throws invalid_argument past size().
  Device open(std::size_t i) const;
  /// Returns the runtime the devices belong to.
  Runtime& runtime() const noexcept { return *runtime_; }

  /// Returns each device's relative speed for op at shape (sums to 1; 0 for a device demoted
  /// for op's size class): 1/seconds from the selection's timings (Runtime::explain's
  /// candidates, measured on the class's first call and persisted), the median of the others for
  /// a device without a time, equal weights when none has one. Throws unavailable (with a Fix)
  /// when every device of the set is demoted there.
  std::vector<double> weights(const std::string& op, const Shape& shape) const;
  /// Returns how many of items (batch entries, rows) each device gets for op at shape:
  /// weights() scaled to items and rounded by largest remainder (they sum to items).
  std::vector<std::uint32_t> shares(const std::string& op, const Shape& shape, std::uint32_t items) const;

 private:
  struct Found {};  // the tag of the constructor over devices already found (all())
  DeviceSet(Found, Runtime& runtime, std::vector<DeviceInfo> infos) : runtime_(&runtime), infos_(std::move(infos)) {}

  Runtime* runtime_;
  std::vector<DeviceInfo> infos_;
};

/// Splits items in proportion to weights (which need not sum to 1; non-negative, at least one
/// positive), rounding by largest remainder so the parts sum to items; ties go to the earlier.
VGPU_API std::vector<std::uint32_t> split_by_weight(const std::vector<double>& weights, std::uint32_t items);

}  // namespace vgpu
