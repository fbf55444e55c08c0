// SPDX-License-Identifier: Apache-2.0
// core/src/calibrate_order.cpp — calibration phase 5: the ordered Selection and its choice.
#include <algorithm>

#include "calibration.hpp"
#include "size_class.hpp"
#include "vgpu/error.hpp"

namespace vgpu::detail::calibration {
namespace {

// The selection's fields that do not depend on the measurements.
Selection start_selection(const Request& r) {
  Selection s;
  s.op = r.op;
  s.shape = r.shape;
  s.calibration_shape = r.shape;
  s.size_class = size_class_of_work(r.work);
  return s;
}

// 0: measured at the real size, 1: predicted or stopped after a warm-up, 2: cannot run.
int rank(const SelectionCandidate& c) { return !c.eligible ? 2 : c.runs > 0 ? 0 : 1; }

}  // namespace

Selection single_candidate(const Request& r, Field field, Clock::time_point t0) {
  Selection s = start_selection(r);
  Candidate& only = field.eligible.front();
  only.result.note = "the only eligible device; not timed";
  s.candidates.push_back(only.result);
  s.candidates.insert(s.candidates.end(), field.ineligible.begin(), field.ineligible.end());
  s.device = only.result.device;
  s.source = SelectionSource::only;
  s.calibration_seconds = seconds_since(t0);
  return s;
}

Selection order_candidates(const Request& r, Field field, Clock::time_point t0) {
  Selection s = start_selection(r);
  for (Candidate& cand : field.eligible) s.candidates.push_back(cand.result);
  s.candidates.insert(s.candidates.end(), field.ineligible.begin(), field.ineligible.end());
  std::stable_sort(s.candidates.begin(), s.candidates.end(), [](const auto& a, const auto& b) {
    return rank(a) != rank(b) ? rank(a) < rank(b) : a.seconds < b.seconds;
  });
  if (!s.candidates.front().eligible) {
    std::string why;
    for (const auto& c : s.candidates) why += "\n  " + c.device + ": " + c.note;
    fail(ErrorCategory::unavailable, "every device failed to run '" + r.op + "' at " + to_string(r.shape) + ":" + why,
         "check the devices with vgpu-probe (its self-test runs every op), or force one with VGPU_DEVICE.");
  }
  s.device = s.candidates.front().device;
  s.candidates.insert(s.candidates.end(), field.skipped.begin(), field.skipped.end());
  const auto eligible = std::count_if(s.candidates.begin(), s.candidates.end(), [](auto& c) { return c.eligible; });
  // Demoted devices count as eligible here (they could run it): only one left means "only".
  s.source = eligible == 1 ? SelectionSource::only : SelectionSource::calibrated;
  s.calibration_seconds = seconds_since(t0);
  return s;
}

}  // namespace vgpu::detail::calibration
