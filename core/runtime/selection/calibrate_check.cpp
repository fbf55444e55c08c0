// SPDX-License-Identifier: Apache-2.0
// core/runtime/selection/calibrate_check.cpp — calibration's result check (phase 3's warm-up call): each
// candidate's first result against a reference before it can be chosen (calibration.hpp).
#include <algorithm>

#include "calibration.hpp"
#include "vgpu/error.hpp"
#include "vgpu/log.hpp"
#include "vgpu/ops.hpp"

namespace vgpu::detail::calibration {

ResultChecker::ResultChecker(const Request& r, const DeviceSource& source, const std::vector<Candidate>& eligible)
    : r_(r), source_(source), shape_(r.shape) {
  const std::vector<std::string> builtins = ops::names();
  builtin_ = std::find(builtins.begin(), builtins.end(), r.op) != builtins.end();
  if (builtin_) return;
  // A user's op: vgpu's CPU device runs its CPU dialect as the reference, when it can run the op
  // at all (eligible: the plan builds there and has a CPU dialect; not demoted).
  for (const Candidate& c : eligible)
    if (c.info.backend == BackendKind::cpu) {
      cpu_ = c.info;
      break;
    }
  if (!cpu_) return;
  // Bigger than a probe: the reference and each candidate's check run at the probe's shape, so
  // that the CPU never runs a problem it would be excluded from.
  if (const std::optional<Shape> p = probe_shape(r)) {
    apart_ = true;
    shape_ = *p;
  }
}

CallData& ResultChecker::prepare(const Candidate& cand, const KernelPlan& plan, HostDataPool& data) {
  CallData& inputs = data.pristine(plan);
  if (tried_) return inputs;
  if (builtin_) {
    tried_ = true;
    ref_ = check::builtin_reference(r_.op, plan, inputs);
    ref_signature_ = call_signature(plan);
    return inputs;
  }
  // The reference device's own check call becomes the reference (judge()).
  if (!cpu_ || cand.info.id() == cpu_->id()) return inputs;
  tried_ = true;
  try {
    const KernelPlan ref_plan = r_.factory(*cpu_, shape_);
    if (call_signature(ref_plan) != call_signature(plan)) return inputs;  // not the same tensors: not comparable
    CallData run = make_call_data(ref_plan);  // the same values as inputs (make_call_data is deterministic)
    PersistentKernel pk(source_.open(cpu_->id()), ref_plan);
    pk(run.args);
    ref_ = check::run_reference(ref_plan, run, cpu_->id() + "'s result of the op's CPU dialect");
    ref_signature_ = call_signature(ref_plan);
  } catch (const Error& e) {
    // No reference: the candidates go unchecked, as for a user op without a CPU dialect.
    log(LogLevel::info, "the CPU reference of '" + r_.op + "' at " + to_string(shape_) +
                            " failed; its candidates are not checked: " + first_line(e.what()));
  }
  return inputs;
}

bool ResultChecker::judge(Candidate& cand, const KernelPlan& plan, const CallData& got) {
  SelectionCandidate& c = cand.result;
  if (!ref_ && !builtin_ && cpu_ && cand.info.id() == cpu_->id()) {
    // The reference device itself, first to be checked: its result is the reference.
    tried_ = true;
    ref_ = check::run_reference(plan, got, cpu_->id() + "'s result of the op's CPU dialect");
    ref_signature_ = call_signature(plan);
    c.check = ResultCheck::passed;
    c.check_error = 0;
    return true;
  }
  if (!ref_ || call_signature(plan) != ref_signature_) return true;  // nothing to compare with: unchecked
  const check::Outcome o = check::compare(*ref_, plan, got);
  c.check_error = o.worst_ratio;
  if (o.ok()) {
    c.check = ResultCheck::passed;
    return true;
  }
  c.check = ResultCheck::wrong;
  c.eligible = false;
  c.seconds = 0;
  c.runs = 0;
  c.note = "rejected: wrong result (" + o.describe() + ")";
  log(LogLevel::warn, c.device + " computed a wrong result for '" + r_.op + "' at " + to_string(shape_) + " (" +
                          o.describe() + "); it is never chosen for this op and size class.");
  return false;
}

bool ResultChecker::check_apart(Candidate& cand, Device& device, HostDataPool& data) {
  KernelPlan plan;
  try {
    plan = plan_on(r_.factory, device, shape_);
  } catch (const Error&) {
    return true;  // it cannot build the probe's shape: checked nowhere, as a predicted device
  }
  PersistentKernel pk(device, plan);
  CallData& args = prepare(cand, plan, data);
  pk(args.args);
  return judge(cand, plan, args);
}

}  // namespace vgpu::detail::calibration
