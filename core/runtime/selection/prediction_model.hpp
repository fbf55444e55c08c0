// SPDX-License-Identifier: Apache-2.0
// core/runtime/selection/prediction_model.hpp — the prediction model of calibration (docs/selection.md,
// "Prediction model"): per device and op, t = fixed + bytes·s_per_byte + flops·s_per_flop,
// fitted to probes at a few sizes, persisted next to the selections, and trusted for excluding
// a device only while every check against a real-size measurement stayed within 2x.
// Why a model and not one probe scaled linearly: a GPU probed where it is overhead-bound and
// scaled by work predicted 14x too much at 4096³ on the H200 (issue 17).
// Thread-safety: pure functions, plus the store's own guarantees for load/store.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/cache/disk_store.hpp"
#include "vgpu/device_info.hpp"
#include "vgpu/kernel_plan.hpp"

namespace vgpu::detail::model {

/// What one call of op at a shape moves and computes: bytes over the host<->device link (every
/// caller-visible tensor, up and down), floating-point operations. known is false for a user op
/// (then flops holds the work and bytes is 0: the fit has one size term).
struct OpCost {
  double bytes = 0;
  double flops = 0;
  bool known = false;
};

/// Returns the cost of op at shape (matmul 2mkn flops and 4(mk+kn+mn) bytes; the elementwise
/// ops, reduce_sum and softmax_rows by their tensors; a user op by selection_work alone).
OpCost op_cost(const std::string& op, const Shape& shape);

/// One timed size: its shape, cost and median seconds per call.
struct Point {
  Shape shape;
  double bytes = 0, flops = 0, seconds = 0;
};

/// A check of the model against a real-size measurement.
struct Check {
  Shape shape;
  double work = 0;  // selection_work of shape: compared with the largest probe's
  double predicted = 0, measured = 0;
};

/// Bounds of the model (docs/selection.md lists them).
inline constexpr double kTrustFactor = 2;      // a check off by more, either way, untrusts it
inline constexpr std::size_t kMaxPoints = 16;  // probes and checks kept (the reader's bound too)

/// A fitted model of one device for one op.
struct Model {
  std::string op, device;  // device: its id ("vulkan:0")
  double fixed_s = 0, s_per_byte = 0, s_per_flop = 0;
  std::vector<Point> probes;
  std::vector<Check> checks;
  bool trusted = true;  // false once a check at a size ≥ the largest probe was off by > kTrustFactor
  /// Returns the predicted seconds of one call at cost c.
  double predict(const OpCost& c) const { return fixed_s + c.bytes * s_per_byte + c.flops * s_per_flop; }
  /// Returns the largest probed work (selection_work), 0 without probes.
  double largest_probe_work() const;
  /// Records predicted vs measured at shape and untrusts the model when the check says so;
  /// the oldest checks go beyond kMaxPoints.
  void record_check(const Shape& shape, double predicted, double measured);
};

/// Fits fixed, s_per_byte and s_per_flop (all ≥ 0) to points, least squares in relative error.
/// Bytes and flops that grow together (ratio within 1.5x over the points: the elementwise ops)
/// cannot be told apart, so then only fixed + one size term (bytes, or flops when bytes are 0)
/// is fitted. Throws invalid_argument for fewer than two points or a non-positive time.
Model fit(std::vector<Point> points);

/// Returns the L2 key text of op's model on device: "model;v=1;op=<op>;device=<id>=<fingerprint>".
std::string key_text(const std::string& op, const DeviceInfo& device);

/// Returns m as its JSON entry (docs/cache-format.md, "model").
std::string to_json(const Model& m);
/// Returns the model in text, or nothing with *why set: a strict reader (every field present
/// with its type, finite non-negative numbers, bounded lists, op and device as expected, the
/// trusted flag agreeing with the checks).
std::optional<Model> from_json(std::string_view text, const std::string& op, const std::string& device,
                               std::string* why);

/// Returns the stored model of op on device, or nothing (absent, disabled, or damaged: a
/// damaged entry is dropped with one warning, so the caller probes and stores a fresh one).
std::optional<Model> load(cache::DiskStore& store, const std::string& op, const DeviceInfo& device);
/// Stores m for device (a no-op when the store is disabled).
void store(cache::DiskStore& store, const DeviceInfo& device, const Model& m);

}  // namespace vgpu::detail::model
