// SPDX-License-Identifier: Apache-2.0
// core/runtime/selection/calibrate_order.cpp — calibration phase 5: the ordered Selection and its choice.
#include <algorithm>
#include <cstdio>
#include <string>

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

std::string fmt_factor(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", f);
  return buf;
}

// The choice among measured candidates (sorted by time, the fastest first): the incumbent when
// within kTieFactor of the fastest, else the first in the stable order within kStableFactor,
// else the fastest; moved to the front with a note saying why. Why: noise between processes
// must not flip a choice between devices that are equally good, so a tie goes to a fixed
// device rather than to whichever measured faster this time.
void choose(std::vector<SelectionCandidate>& sorted, const std::vector<std::string>& stable,
            const std::string& incumbent) {
  if (sorted.empty() || rank(sorted.front()) != 0) return;
  const double best = sorted.front().seconds;
  const std::string fastest = sorted.front().device;
  auto measured_end = std::find_if(sorted.begin(), sorted.end(), [](auto& c) { return rank(c) != 0; });
  const auto within = [&](double factor) {
    std::vector<std::vector<SelectionCandidate>::iterator> in;
    for (auto it = sorted.begin(); it != measured_end; ++it)
      if (it->seconds <= factor * best) in.push_back(it);
    return in;
  };
  auto chosen = sorted.begin();
  std::string why;
  const auto ties = within(kTieFactor);
  if (ties.size() > 1) {
    auto inc = std::find_if(ties.begin(), ties.end(), [&](auto it) { return it->device == incumbent; });
    if (!incumbent.empty() && inc != ties.end()) {
      chosen = *inc;
      why = "within " + fmt_factor(kTieFactor) + " of the best (" + fastest + "): kept the incumbent";
    } else {
      const auto rank_of = [&](auto it) {
        return std::find(stable.begin(), stable.end(), it->device) - stable.begin();
      };
      const auto near = within(kStableFactor);
      chosen = *std::min_element(near.begin(), near.end(), [&](auto a, auto b) { return rank_of(a) < rank_of(b); });
      why = chosen == sorted.begin()
                ? "the fastest; others within " + fmt_factor(kTieFactor) +
                      (near.size() > 1 ? ", and first in the stable order" : "")
                : "within " + fmt_factor(kStableFactor) + " of the best (" + fastest +
                      "): first in the stable order (device type, then registry order), so that processes agree";
    }
  } else {
    why = "the fastest";
  }
  chosen->note += (chosen->note.empty() ? "" : "; ") + std::string("chosen: ") + why;
  std::rotate(sorted.begin(), chosen, chosen + 1);
}

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
  std::vector<std::string> stable;  // field.eligible is in the stable order
  for (Candidate& cand : field.eligible) {
    s.candidates.push_back(cand.result);
    stable.push_back(cand.result.device);
  }
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
  choose(s.candidates, stable, r.incumbent);
  s.device = s.candidates.front().device;
  s.candidates.insert(s.candidates.end(), field.skipped.begin(), field.skipped.end());
  // Demoted devices count as eligible here (they could run it): only one left means "only". So do
  // rejected ones (they ran it, wrongly): their rejection is a measurement worth storing.
  const auto eligible = std::count_if(s.candidates.begin(), s.candidates.end(),
                                      [](auto& c) { return c.eligible || c.check == ResultCheck::wrong; });
  s.source = eligible == 1 ? SelectionSource::only : SelectionSource::calibrated;
  s.calibration_seconds = seconds_since(t0);
  return s;
}

}  // namespace vgpu::detail::calibration
