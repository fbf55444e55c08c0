// SPDX-License-Identifier: Apache-2.0
// core/runtime/selection/calibrate_eligible.cpp — calibration phase 1: which devices can run the request.
#include <algorithm>

#include "calibration.hpp"
#include "vgpu/error.hpp"

namespace vgpu::detail::calibration {
namespace {

// Why plan cannot run on d (memory), or empty. Each tensor counts its dtype's size, scratch
// tensors included (they live on the device too).
std::string memory_problem(const DeviceInfo& d, const KernelPlan& plan) {
  std::uint64_t total = 0;
  for (const TensorSpec& t : plan.tensors) {
    const std::uint64_t bytes = tensor_bytes(t.shape, t.dtype);  // invalid_argument past 64 bits
    if (d.limits.max_buffer_bytes && bytes > d.limits.max_buffer_bytes)
      return "tensor '" + t.name + "' needs " + std::to_string(bytes) + " bytes, over the device's buffer limit";
    if (__builtin_add_overflow(total, bytes, &total))
      return "its tensors need more bytes than 64 bits can count, more than the device's memory allows";
  }
  // Leave a fifth of the memory to everything else on the device.
  if (d.memory_bytes && total > d.memory_bytes / 5 * 4)
    return "needs " + std::to_string(total) + " bytes, more than the device's memory allows";
  return {};
}

// Why d cannot run plan (dialect, memory), or empty.
std::string plan_problem(const DeviceInfo& d, const KernelPlan& plan) {
  for (std::size_t i = 0; i < plan.kernel_count(); ++i) {
    if (plan.kernel_source(i).pick(d.dialects)) continue;
    std::string accepts;
    for (const std::string& name : d.dialects) accepts += (accepts.empty() ? "" : ", ") + name;
    const std::string which = i == 0 ? "the kernel" : "its kernel '" + plan.kernel_source(i).name + "'";
    return which + " has no source in " + std::string(to_string(d.backend)) + "'s dialect (" +
           (accepts.empty() ? "none" : accepts) + ")";
  }
  return memory_problem(d, plan);
}

// Devices likely to win are timed first, so the skip rules have a good "best" early.
int prior_rank(const DeviceInfo& d) {
  switch (d.type) {
    case DeviceType::discrete_gpu:
      return 0;
    case DeviceType::integrated_gpu:
      return 1;
    case DeviceType::cpu:
      return 2;
    case DeviceType::virtual_gpu:
      return 3;
    case DeviceType::other:
      return 4;
    case DeviceType::software:
      return 5;
  }
  return 6;
}

// Throws unavailable naming why each device (or, with none, each backend) cannot run r.
[[noreturn]] void fail_none_eligible(const Request& r, const DeviceSource& source,
                                     const std::vector<SelectionCandidate>& ineligible) {
  std::string why;
  for (const auto& c : ineligible) why += "\n  " + c.device + ": " + c.note;
  if (ineligible.empty())  // no device at all: say why each backend has none
    for (const BackendStatus& b : source.backends())
      why += "\n  " + std::string(to_string(b.kind)) + ": " + (b.available ? "no device" : b.reason);
  fail(ErrorCategory::unavailable, "no device can run '" + r.op + "' at " + to_string(r.shape) + ":" + why,
       "check VGPU_BACKEND / VGPU_DEVICE, or run vgpu-probe to see which devices are available.");
}

}  // namespace

Field find_eligible(const Request& r, const DeviceSource& source, const std::set<std::string>& demoted) {
  Field f;
  for (const DeviceInfo& d : source.devices()) {
    SelectionCandidate c;
    c.device = d.id();
    if (demoted.contains(c.device)) {
      f.skipped.push_back(SelectionCandidate{c.device, true, 0, 0, true, "demoted: failed for this op"});
      continue;
    }
    try {
      KernelPlan plan = r.factory(d, r.shape);
      c.note = plan_problem(d, plan);
      c.eligible = c.note.empty();
      if (c.eligible) f.eligible.push_back(Candidate{d, std::move(plan), c, nullptr, {}});
    } catch (const Error& e) {
      // The shape's form was checked by selection_work(); what a factory rejects now is this
      // device (limits, dialect). If every device rejects it, the error lists them all.
      c.note = first_line(e.what());
    }
    if (!c.eligible) f.ineligible.push_back(c);
  }
  if (f.eligible.empty()) fail_none_eligible(r, source, f.ineligible);
  std::stable_sort(f.eligible.begin(), f.eligible.end(),
                   [](const Candidate& a, const Candidate& b) { return prior_rank(a.info) < prior_rank(b.info); });
  return f;
}

}  // namespace vgpu::detail::calibration
