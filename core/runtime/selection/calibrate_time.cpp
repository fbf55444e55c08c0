// SPDX-License-Identifier: Apache-2.0
// core/runtime/selection/calibrate_time.cpp — calibration phase 3: timed runs at the real shape.
#include <algorithm>
#include <cmath>

#include "calibration.hpp"
#include "calibration_hold.hpp"
#include "vgpu/backend/exit_order.hpp"
#include "vgpu/error.hpp"
#include "vgpu/log.hpp"

namespace vgpu::detail::calibration {
namespace {

// Frees the kernels of devices outside the contenders' window of best: only contenders are
// timed again, and several devices may share host memory.
void release_outside_window(std::vector<Candidate>& all, double best) {
  for (Candidate& other : all)
    if (other.kernel && !contends(other, best)) other.kernel.reset();
}

}  // namespace

void time_runs(const Request& r, Candidate& cand, double best, HostDataPool& data, ResultChecker* checker) {
  SelectionCandidate& c = cand.result;
  PersistentKernel& pk = *cand.kernel;
  const bool checking = checker && checker->at_real_shape();
  CallData& args = checking ? checker->prepare(cand, cand.plan, data) : data.for_plan(cand.plan);
  const TimingClock& clock = clock_of(pk);
  calibration_hold_point(c.device);  // a test may end the process with this call in flight
  const auto tw = clock.now();
  pk(args.args);  // warm-up: first-use costs (page faults, lazy pipeline work) stay out
  const double warm = seconds_since(clock, tw);
  // A first compile and dispatch may have made the driver register exit handlers (lazily
  // created threads and statics): vgpu's, which stops this thread, must stay ahead of them.
  keep_first_at_exit(/*force=*/true);
  // The warm-up's result is checked before anything is timed: a wrong one is never timed.
  if (checking && !checker->judge(cand, cand.plan, args)) {
    cand.kernel.reset();
    return;
  }
  if (warm > kWarmupSkip * best) {
    c.seconds = warm;
    c.note = "warm-up call " + fmt_ratio(warm / best) + " the best; stopped";
    cand.kernel.reset();
    return;
  }
  std::vector<double>& times = cand.times;
  // Where the device times its dispatches, each run's device time beside its host time: what
  // the counters gained over the run (other work on the device meanwhile would count too).
  const Device& device = pk.device();
  const bool device_timed = device.device_timing();
  std::vector<double> device_times;
  const auto td = clock.now();
  while (static_cast<int>(times.size()) < kRuns) {
    stop_if_cancelled(r);
    const std::uint64_t ns_before = device_timed ? device.counters().device_ns : 0;
    const auto tr = clock.now();
    pk(args.args);
    times.push_back(seconds_since(clock, tr));
    if (device_timed) device_times.push_back(static_cast<double>(device.counters().device_ns - ns_before) * 1e-9);
    if (times.size() == 1 && times[0] > kRunSkip * best) {
      // One more call before stopping: a single spike (a preemption, a page fault) must not
      // drop the fastest device. Only the faster of the two is kept, so runs stays 1.
      const auto tc = clock.now();
      pk(args.args);
      times[0] = std::min(times[0], seconds_since(clock, tc));
      if (times[0] > kRunSkip * best) {
        c.note = "first run " + fmt_ratio(times[0] / best) + " the best (and a second call); stopped";
        break;
      }
    }
    if (seconds_since(clock, td) > kDeviceBudget) break;
  }
  c.seconds = median(times);
  c.runs = static_cast<int>(times.size());
  if (!device_times.empty()) c.device_seconds = median(device_times);
}

void measure(const Request& r, Candidate& cand, const DeviceSource& source, const std::optional<Shape>& pshape,
             double& best, std::vector<Candidate>& all, HostDataPool& data, ResultChecker* checker) {
  try {
    Device dev = source.open(cand.info.id());
    // The plan that device will run: a built-in op's with the variant measured on it (the
    // eligibility phase planned without the device open). Any other factory's plan is the one
    // already made, so a user's factory is not asked twice.
    if (is_builtin_plan_factory(r.factory)) cand.plan = plan_on(r.factory, dev, r.shape);
    // A check apart from the timed runs (a big user op): a wrong device is neither probed nor timed.
    if (checker && !checker->at_real_shape() && !checker->check_apart(cand, dev, data)) return;
    // The probe needs a best to compare with: the first device always runs the real size.
    if (pshape && std::isfinite(best) && probe_rules_out(r, cand, dev, *pshape, best, data)) return;
    stop_if_cancelled(r);
    cand.kernel = std::make_unique<PersistentKernel>(dev, cand.plan);
    stop_if_cancelled(r);
    time_runs(r, cand, best, data, checker);
    if (cand.result.check == ResultCheck::wrong) return;  // rejected: its time never sets best
    check_model(r, cand);               // its model's prediction beside this measurement (prediction_model.hpp)
    if (cand.result.runs == 0) return;  // stopped after its warm-up
    best = std::min(best, cand.result.seconds);
    release_outside_window(all, best);
  } catch (const Error& e) {
    // Stopped (or failing because the stop is tearing things down): nothing is said about the
    // device, and the calibration ends unrecorded.
    if (cancelled(r)) throw;
    // Failing while calibrating is failing for this op: never chosen in this process.
    cand.kernel.reset();
    cand.result.eligible = false;
    cand.result.note = "failed: " + first_line(e.what());
    log(LogLevel::warn, cand.result.device + " failed while calibrating '" + r.op + "': " + first_line(e.what()));
  }
}

}  // namespace vgpu::detail::calibration
