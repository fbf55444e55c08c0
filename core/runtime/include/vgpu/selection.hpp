// SPDX-License-Identifier: Apache-2.0
// vgpu/selection.hpp — which device runs an op at a size, measured on first use and persisted.
//
// For an op and a size class (the power-of-two bucket of its work: m·k·n for matmul, the
// element count otherwise), the first call times real runs — uploads, dispatch and readback,
// through a PersistentKernel — on every eligible device and picks the fastest. Devices a first
// run (or, for big problems, a small probe run scaled up) shows to be far slower stop early.
// The choice is written next to the L2 cache, keyed by op, size class and the fingerprints of
// every device, so a later process reuses it without calibrating; any driver or device change
// gives a new key. VGPU_CACHE_DISABLE=1 keeps choices in memory. VGPU_DEVICE forces a device,
// VGPU_BACKEND restricts the candidates. A device that fails for an op is demoted and the next
// one (down to the CPU) takes over. Runtime::select/explain are the API; vgpu::select/explain
// use Runtime::global().
#pragma once

#include "vgpu/export.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "vgpu/device.hpp"
#include "vgpu/kernel_plan.hpp"
#include "vgpu/tolerance.hpp"  // ResultCheck

namespace vgpu {

/// Where a selection came from.
enum class SelectionSource {
  calibrated,  ///< measured in this process
  persisted,   ///< read from the selection cache next to L2
  forced,      ///< VGPU_DEVICE (RuntimeOptions::forced_device)
  fallback,    ///< the measured choice was demoted; the next candidate in order
  only,        ///< a single eligible device: nothing to compare
  interim,     ///< a ready device (the CPU, or the stored choice being rechecked) serves while the
               ///< calibration runs in the background (VGPU_BACKGROUND); later calls switch over
};

/// Returns "calibrated", "persisted", "forced", "fallback", "only" or "interim".
VGPU_API const char* to_string(SelectionSource source) noexcept;

/// One device considered for an op at a size.
struct VGPU_API SelectionCandidate {
  std::string device;     ///< "backend:index"
  bool eligible = false;  ///< false: could not run it, or computed it wrong (see note)
  double seconds = 0;     ///< median time of one call (uploads, dispatch, readback), or the prediction
  int runs = 0;           ///< timed runs at the real shape (0: predicted from a probe, or ineligible)
  bool demoted = false;   ///< failed for this op in this process
  std::string note;       ///< why it was skipped, predicted, rejected or demoted
  ResultCheck check = ResultCheck::unchecked;  ///< whether its result was checked, and how that went
  /// The worst |result − reference| / tolerance over the checked elements (≤ 1: passed); 0 when
  /// unchecked. Capped at 1e300 (a NaN or infinite result counts as the cap).
  double check_error = 0;
  /// Median time the device's own timer measured for one call's dispatches during the timed
  /// runs (Device::set_device_timing, VGPU_DEVICE_TIMING); 0 when the device was not timing.
  double device_seconds = 0;
};

/// A selection and why it was made.
struct VGPU_API Selection {
  std::string op;
  Shape shape;                   ///< the shape asked about
  Shape calibration_shape;       ///< the shape the candidates were timed at (the class's first call)
  std::uint32_t size_class = 0;  ///< ceil(log2(work)): shapes with the same class share a choice
  std::string device;            ///< the device to use: "backend:index"
  SelectionSource source = SelectionSource::calibrated;
  std::vector<SelectionCandidate> candidates;  ///< eligible first, fastest first
  double calibration_seconds = 0;              ///< what calibrating cost when it happened (0 when persisted/forced)
  double lookup_seconds = 0;                   ///< what this explain()/select() call cost
  /// Returns a few human-readable lines: the choice, its source and every candidate.
  std::string describe() const;
};

/// What background calibration did in one Runtime (Runtime::background_stats). A plain value.
struct VGPU_API BackgroundStats {
  std::uint64_t interim = 0;    ///< size classes served by an interim device while they were measured
  std::uint64_t rechecks = 0;   ///< of those, stored choices rechecked (device, driver, vgpu or plan changed)
  std::uint64_t finished = 0;   ///< background calibrations that finished (their choice is now in use)
  std::uint64_t switches = 0;   ///< of those, choices that moved away from the interim device
  std::uint64_t failed = 0;     ///< background calibrations that failed (the interim device stays)
  std::uint64_t cancelled = 0;  ///< background calibrations cancelled by the runtime's destruction or exit
};

/// Returns the work of op at shape that decides its size class (m·k·n for matmul, else the
/// element count); throws invalid_argument for an unknown op or a malformed shape.
VGPU_API std::uint64_t selection_work(const std::string& op, const Shape& shape);

/// Returns the device Runtime::global() chose for op at shape (calibrating on first use).
VGPU_API Device select(const std::string& op, const Shape& shape);
/// Returns the selection Runtime::global() made for op at shape, with candidates and timings.
VGPU_API Selection explain(const std::string& op, const Shape& shape);

class Runtime;

/// Returns the op name a selection of built-in op on arrays of dtype is made and stored under:
/// op itself for f32, "op.f16" / "op.bf16" for the 16-bit dtypes, so each dtype has size classes
/// and choices of its own (a 16-bit op is a different plan: docs/numerics.md). Throws
/// invalid_argument for an unknown op, not_supported for a dtype the ops do not compute on.
VGPU_API std::string dtype_op_name(const std::string& op, DType dtype);
/// Returns the device runtime chose for built-in op at shape on arrays of dtype (measured on
/// the first call of the dtype's size class, the CPU among the candidates as for float32).
VGPU_API Device select(Runtime& runtime, const std::string& op, const Shape& shape, DType dtype);
/// Returns the selection runtime made for built-in op at shape on arrays of dtype.
VGPU_API Selection explain(Runtime& runtime, const std::string& op, const Shape& shape, DType dtype);

}  // namespace vgpu
