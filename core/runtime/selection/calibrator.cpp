// SPDX-License-Identifier: Apache-2.0
// core/runtime/selection/calibrator.cpp — a calibration: its phases in order, and their shared helpers.
#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>

#include "calibration.hpp"
#include "device_core.hpp"
#include "vgpu/error.hpp"
#include "vgpu/log.hpp"

namespace vgpu::detail::calibration {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double seconds_since(const TimingClock& clock, TimingClock::time_point t0) {
  return std::chrono::duration<double>(clock.now() - t0).count();
}

const TimingClock& clock_of(const PersistentKernel& kernel) { return DeviceAccess::clock(kernel.device()); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string fmt_ratio(double r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0fx", r);
  return buf;
}

TimingTurns::Turn TimingTurns::take() {
  const std::thread::id self = std::this_thread::get_id();
  std::unique_lock lock(mutex_);
  if (owner_ != self && !free_.wait_for(lock, kTurnWait, [&] { return owner_ == std::thread::id(); })) {
    log(LogLevel::debug, "a calibration waited " + std::to_string(kTurnWait.count()) +
                             " s for another one's timed runs; timing beside it.");
    return Turn(nullptr);
  }
  owner_ = self;
  ++depth_;
  return Turn(this);
}

void TimingTurns::give_back() noexcept {
  std::lock_guard lock(mutex_);
  if (--depth_ > 0) return;
  owner_ = std::thread::id();
  free_.notify_one();
}

Selection calibrate(const Request& r, const DeviceSource& source, const std::set<std::string>& demoted,
                    TimingTurns* turns) {
  const auto t0 = Clock::now();
  Field field = find_eligible(r, source, demoted);
  if (field.eligible.size() == 1) return single_candidate(r, std::move(field), t0);
  const TimingTurns::Turn turn = turns ? turns->take() : TimingTurns::Turn(nullptr);
  HostDataPool data;
  double best = std::numeric_limits<double>::infinity();
  const std::optional<Shape> pshape = probe_shape(r);
  // A background calibration being stopped (runtime destroyed, process exiting) ends between
  // devices, their steps or separation rounds; what it measured is dropped.
  ResultChecker checker(r, source, field.eligible);
  for (Candidate& cand : field.eligible) {
    stop_if_cancelled(r);
    measure(r, cand, source, pshape, best, field.eligible, data, &checker);
  }
  refine_close(field.eligible, best, data, r.cancelled);
  stop_if_cancelled(r);
  return order_candidates(r, std::move(field), t0);
}

bool cancelled(const Request& r) { return r.cancelled && r.cancelled(); }

void stop_if_cancelled(const Request& r) {
  if (cancelled(r))
    fail(ErrorCategory::unavailable, "the calibration of '" + r.op + "' was cancelled: its runtime is shutting down.",
         "nothing to fix: the next process measures again.");
}

}  // namespace vgpu::detail::calibration
