// SPDX-License-Identifier: Apache-2.0
// core/runtime/selection/calibrate_probe.cpp — calibration phase 2: predict a big problem from small ones,
// through the prediction model (prediction_model.hpp): fitted to probes at sizes 8x apart, or
// read back from the store, and used to exclude a device only while it is trusted.
#include <algorithm>
#include <cmath>

#include "calibration.hpp"
#include "vgpu/log.hpp"

namespace vgpu::detail::calibration {
namespace {

// The work of the probe shape: big enough to be past per-call overheads on a GPU, small
// enough that even a software rasteriser runs it in well under a second.
std::uint64_t probe_work(const std::string& op) { return op == "matmul" ? (1ull << 24) : (1ull << 20); }

// The model's first probe (32³ for matmul): where every device is still overhead-bound, which
// is what pins the fixed cost.
std::uint64_t first_model_work(const std::string& op) { return op == "matmul" ? (1ull << 15) : (1ull << 14); }

// shape with every dimension scaled alike so its work is about work (proportions kept).
Shape scaled_to(const Shape& shape, std::uint64_t real_work, double work) {
  const double scale = std::pow(work / double(real_work), 1.0 / double(shape.size()));
  Shape p = shape;
  for (auto& d : p) d = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(double(d) * scale)));
  return p;
}

std::string describe_probes(const model::Model& m) {
  return std::to_string(m.probes.size()) + " probes up to " + to_string(m.probes.back().shape);
}

}  // namespace

std::optional<Shape> probe_shape(const Request& r) {
  if (r.work <= probe_work(r.op)) return std::nullopt;
  return scaled_to(r.shape, r.work, double(probe_work(r.op)));
}

double time_at(const PlanFactory& factory, Device& device, const Shape& shape, HostDataPool& data) {
  KernelPlan plan = plan_on(factory, device, shape);
  PersistentKernel pk(device, plan);
  CallData& args = data.for_plan(plan);
  pk(args.args);  // warm-up: first-use costs stay out of the model's fixed cost
  const TimingClock& clock = clock_of(pk);
  std::vector<double> t;
  for (int i = 0; i < kProbeRuns; ++i) {
    const auto t0 = clock.now();
    pk(args.args);
    t.push_back(seconds_since(clock, t0));
  }
  return median(t);
}

std::optional<model::Model> fit_model(const std::string& op, const Shape& shape, const PlanFactory& factory,
                                      Device& device, HostDataPool& data) {
  const std::uint64_t work = selection_work(op, shape);
  std::vector<model::Point> points;
  Shape last;
  const double top = double(work) / 8;
  for (double w = double(first_model_work(op)); points.size() < kMaxProbes; w *= 8) {
    // The last step stops at the real work / 8, so a request just past the probe size still
    // gets its two points.
    const bool last_step = w >= top;
    const Shape p = scaled_to(shape, work, std::min(w, top));
    if (p == last) {  // a thin shape: its small dimensions stay at 1
      if (last_step) break;
      continue;
    }
    last = p;
    const model::OpCost c = model::op_cost(op, p);
    const double t = time_at(factory, device, p, data);
    points.push_back(model::Point{p, c.bytes, c.flops, t});
    // Past the overheads: the next step would cost 8x more and teach little.
    if (last_step || (points.size() >= 2 && t >= kProbeEnough)) break;
  }
  if (points.size() < 2) return std::nullopt;
  model::Model m = model::fit(std::move(points));
  m.op = op;
  m.device = device.info().id();
  return m;
}

bool probe_rules_out(const Request& r, Candidate& cand, Device& device, const Shape& /*pshape*/, double best,
                     HostDataPool& data) {
  bool stored = false;
  if (!cand.model && r.store) {
    cand.model = model::load(*r.store, r.op, cand.info);
    stored = cand.model.has_value();
  }
  if (!cand.model) {
    cand.model = fit_model(r.op, r.shape, r.factory, device, data);
    if (!cand.model) return false;
    if (r.store) model::store(*r.store, cand.info, *cand.model);
  }
  const double predicted = cand.model->predict(model::op_cost(r.op, r.shape));
  if (!cand.model->trusted) {
    cand.result.note = "its prediction model is untrusted for exclusion (a check was off by more than 2x): run";
    return false;
  }
  if (predicted <= kPredictSkip * best || predicted <= kRunCheap) return false;
  cand.result.seconds = predicted;
  cand.result.note = "predicted by its model (" + std::string(stored ? "stored, " : "") + describe_probes(*cand.model) +
                     "): " + fmt_ratio(predicted / best) + " the best; not run at the real size";
  return true;
}

void check_model(const Request& r, Candidate& cand) {
  if (!cand.model || cand.result.runs == 0) return;
  const bool was = cand.model->trusted;
  const double predicted = cand.model->predict(model::op_cost(r.op, r.shape));
  cand.model->record_check(r.shape, predicted, cand.result.seconds);
  if (was && !cand.model->trusted) {
    log(LogLevel::info, cand.info.id() + "'s prediction model of '" + r.op + "' said " + std::to_string(predicted) +
                            " s at " + to_string(r.shape) + ", measured " + std::to_string(cand.result.seconds) +
                            " s: no longer used to exclude it.");
    cand.result.note += std::string(cand.result.note.empty() ? "" : "; ") +
                        "its prediction model was off by more than 2x here: untrusted for exclusion from now on";
  }
  if (r.store) model::store(*r.store, cand.info, *cand.model);
}

}  // namespace vgpu::detail::calibration
