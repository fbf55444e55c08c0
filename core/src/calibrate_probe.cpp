// SPDX-License-Identifier: Apache-2.0
// core/src/calibrate_probe.cpp — calibration phase 2: predict a big problem from a small one.
#include <algorithm>
#include <cmath>

#include "calibration.hpp"

namespace vgpu::detail::calibration {
namespace {

// The work of the probe shape: big enough to be past per-call overheads on a GPU, small
// enough that even a software rasteriser runs it in well under a second.
std::uint64_t probe_work(const std::string& op) { return op == "matmul" ? (1ull << 24) : (1ull << 20); }

}  // namespace

std::optional<Shape> probe_shape(const Request& r) {
  if (r.work <= probe_work(r.op)) return std::nullopt;
  // Every dimension scaled alike, so the probe keeps the shape's proportions.
  const double scale = std::pow(double(probe_work(r.op)) / double(r.work), 1.0 / double(r.shape.size()));
  Shape p = r.shape;
  for (auto& d : p) d = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(double(d) * scale)));
  return p;
}

bool probe_rules_out(const Request& r, Candidate& cand, Device& device, const Shape& pshape, double best,
                     HostDataPool& data) {
  KernelPlan pplan = r.factory(cand.info, pshape);
  PersistentKernel pk(device, pplan);
  CallData& args = data.for_plan(pplan);
  pk(args.args);  // warm-up
  const auto tp = Clock::now();
  pk(args.args);
  const double predicted = seconds_since(tp) * double(r.work) / double(selection_work(r.op, pshape));
  if (predicted <= kPredictSkip * best || predicted <= kRunCheap) return false;
  cand.result.seconds = predicted;
  cand.result.note = "predicted from a probe at " + to_string(pshape) + ": " + fmt_ratio(predicted / best) +
                     " the best; not run at the real size";
  return true;
}

}  // namespace vgpu::detail::calibration
