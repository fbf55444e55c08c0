// SPDX-License-Identifier: Apache-2.0
// core/runtime/selection/selection.cpp — selection names, descriptions, work sizes and the global entry points.
#include "vgpu/selection.hpp"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "builtin_plans.hpp"
#include "dtype_plan.hpp"
#include "vgpu/error.hpp"
#include "vgpu/ops.hpp"
#include "vgpu/runtime.hpp"

namespace vgpu {

const char* to_string(SelectionSource source) noexcept {
  switch (source) {
    case SelectionSource::calibrated:
      return "calibrated";
    case SelectionSource::persisted:
      return "persisted";
    case SelectionSource::forced:
      return "forced";
    case SelectionSource::fallback:
      return "fallback";
    case SelectionSource::only:
      return "only";
    case SelectionSource::interim:
      return "interim";
  }
  return "unknown";
}

std::string Selection::describe() const {
  auto us = [](double s) {
    char buf[48];
    if (s >= 1e-3)
      std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
    else
      std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
    return std::string(buf);
  };
  std::string out = op + " " + to_string(shape) + " (size class " + std::to_string(size_class) + "): " + device + " [" +
                    vgpu::to_string(source) + "]";
  if (source == SelectionSource::calibrated) out += ", calibration took " + us(calibration_seconds);
  out += "\n";
  for (const auto& c : candidates) {
    out += "  " + c.device + ": ";
    if (c.check == ResultCheck::wrong) {  // its note says so: "rejected: wrong result (…)"
      out += c.note + "\n";
      continue;
    }
    if (!c.eligible)
      out += "not eligible";
    else if (c.runs > 0)
      out += us(c.seconds) + " (" + std::to_string(c.runs) + " runs at " + to_string(calibration_shape) +
             (c.device_seconds > 0 ? "; " + us(c.device_seconds) + " on the device" : std::string()) + ")";
    else if (c.seconds > 0)
      out += us(c.seconds);  // the note says whether predicted or a single warm-up call
    else
      out += "-";
    if (c.eligible && c.check == ResultCheck::passed) out += ", result checked";
    if (!c.note.empty()) out += "; " + c.note;
    out += "\n";
  }
  return out;
}

namespace {

/// Refuses an op name that is not UTF-8: the selection cache stores it in JSON, which holds only
/// UTF-8 (nlohmann would throw its own type_error when it is written, deep inside a calibration).
void check_op_name(const std::string& op) {
  try {
    (void)nlohmann::json(op).dump();
  } catch (const nlohmann::json::exception&) {
    fail(ErrorCategory::invalid_argument,
         "op name " + nlohmann::json(op).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace) +
             " is not UTF-8 text.",
         "name the op in UTF-8 (an ASCII name such as \"my_axpy\" is the usual choice).");
  }
}

}  // namespace

std::uint64_t selection_work(const std::string& op, const Shape& shape) {
  check_op_name(op);  // first: everything below names the op in messages and in the store
  const auto builtins = ops::names();
  if (std::find(builtins.begin(), builtins.end(), op) != builtins.end())
    ops::check_shape(op, shape);
  else if (shape.empty())
    fail(ErrorCategory::invalid_argument, "op '" + op + "' got an empty shape.", "pass at least one dimension.");
  std::uint64_t work = 1;
  for (auto d : shape) {
    if (d == 0)
      fail(ErrorCategory::invalid_argument, "op '" + op + "' got shape " + to_string(shape) + " with a zero dimension.",
           "give every dimension a size of at least 1.");
    work *= d;
  }
  return work;
}

Device select(const std::string& op, const Shape& shape) { return Runtime::global().select(op, shape); }

Selection explain(const std::string& op, const Shape& shape) { return Runtime::global().explain(op, shape); }

std::string dtype_op_name(const std::string& op, DType dtype) {
  const auto builtins = ops::names();
  if (std::find(builtins.begin(), builtins.end(), op) == builtins.end())
    fail(ErrorCategory::invalid_argument, "'" + op + "' is not a built-in op; only those are selected per dtype.",
         "name a built-in op (vgpu::ops::names()), or select a user op with its own PlanFactory.");
  detail::require_builtin_dtype(dtype);
  return dtype == DType::f32 ? op : op + "." + std::string(to_string(dtype));
}

Device select(Runtime& runtime, const std::string& op, const Shape& shape, DType dtype) {
  return runtime.select(dtype_op_name(op, dtype), shape, detail::builtin_plan_factory(op, dtype));
}

Selection explain(Runtime& runtime, const std::string& op, const Shape& shape, DType dtype) {
  return runtime.explain(dtype_op_name(op, dtype), shape, detail::builtin_plan_factory(op, dtype));
}

}  // namespace vgpu
