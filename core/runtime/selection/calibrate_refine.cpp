// SPDX-License-Identifier: Apache-2.0
// core/runtime/selection/calibrate_refine.cpp — calibration phase 4: interleaved rounds among contenders
// until each is separated from the best or a sure tie (docs/selection.md, "Calibration").
#include <algorithm>
#include <cmath>
#include <string>

#include "calibration.hpp"

namespace vgpu::detail::calibration {
namespace {

// A contender's interleaved samples, summarised.
struct Summary {
  double median, lo, hi;  // hi/lo: its median's confidence interval
};

Summary summarise(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const auto [lo, hi] = median_interval(v);
  return {v[v.size() / 2], lo, hi};
}

// Where a contender stands against the best.
enum class Verdict { open, separated, tie };

Verdict judge(const Summary& best, const Summary& other) {
  // Apart: the intervals do not overlap and the gap is more than a tie.
  if (best.hi < other.lo && other.median > kTieFactor * best.median) return Verdict::separated;
  // A sure tie: even the top of its interval is within the tie factor of the best's bottom.
  if (other.hi <= kTieFactor * best.lo) return Verdict::tie;
  return Verdict::open;
}

std::string fmt_count(std::size_t n) { return std::to_string(n); }

}  // namespace

bool contends(const Candidate& cand, double best) {
  return cand.result.runs > 0 && !cand.times.empty() &&
         *std::min_element(cand.times.begin(), cand.times.end()) <= kContendFactor * best;
}

std::pair<double, double> median_interval(const std::vector<double>& sorted) {
  // The ranks n/2 ± z·√n/2 bound the median (binomial, normal approximation): about the
  // quartiles at 16 samples, narrowing as 1/√n, so more samples separate closer devices.
  const double n = double(sorted.size()), half = kMedianZ * std::sqrt(n) / 2;
  const auto at = [&](double rank) { return sorted[static_cast<std::size_t>(std::clamp(rank, 0.0, n - 1))]; };
  return {at(std::floor(n / 2 - half)), at(std::ceil(n / 2 + half))};
}

void refine_close(std::vector<Candidate>& cands, double best, HostDataPool& data,
                  const std::function<bool()>& cancelled) {
  std::vector<Candidate*> contenders;
  for (Candidate& cand : cands)
    if (cand.kernel && contends(cand, best)) contenders.push_back(&cand);
  if (contenders.size() > 1) {
    // The budget scales with the per-call times (two calls per sample), so a slow op still gets
    // its minimum rounds where the cap allows and a fast one is not cut short by overheads.
    double round_seconds = 0;
    for (Candidate* cand : contenders) round_seconds += 2 * cand->result.seconds;
    const double budget = std::clamp(kMinSamples * round_seconds * kSeparateSlack, kSeparateBudget, kSeparateCap);
    double spent = 0;  // seconds the rounds' calls took, each on its device's clock
    std::vector<Candidate*> open = contenders;
    std::vector<Verdict> verdict(cands.size(), Verdict::open);
    const auto index = [&](const Candidate* c) { return static_cast<std::size_t>(c - cands.data()); };
    int round = 0;
    while (open.size() > 1 && round < kMaxRounds && spent < budget && !(cancelled && cancelled())) {
      // One sample each per round, so drift hits all alike. Each sample is the second of two
      // back-to-back calls: the first pays for switching from the device timed just before (two
      // APIs on one GPU switch contexts, ~100 us on the H200, which made CUDA and Vulkan read
      // 2x slower than alone and lose matmul 256 to the CPU).
      for (Candidate* cand : open) {
        CallData& args = data.for_plan(cand->plan);
        const TimingClock& clock = clock_of(*cand->kernel);
        const auto t0 = clock.now();
        (*cand->kernel)(args.args);
        const auto t = clock.now();
        (*cand->kernel)(args.args);
        cand->samples.push_back(seconds_since(clock, t));
        spent += seconds_since(clock, t0);
      }
      if (++round < kMinSamples) continue;
      // Judge every open contender against the best of them; a separated one stops (it cannot
      // become the best unless the best drifts past it), a sure tie stops too.
      Candidate* lead = *std::min_element(open.begin(), open.end(), [](auto* a, auto* b) {
        return summarise(a->samples).median < summarise(b->samples).median;
      });
      const Summary b = summarise(lead->samples);
      std::erase_if(open, [&](Candidate* c) {
        if (c == lead) return false;
        verdict[index(c)] = judge(b, summarise(c->samples));
        return verdict[index(c)] != Verdict::open;
      });
    }
    for (Candidate* cand : contenders) {
      if (cand->samples.empty()) continue;
      cand->result.seconds = median(cand->samples);  // interleaved samples only: same conditions
      cand->result.runs = static_cast<int>(cand->times.size() + cand->samples.size());
      const Verdict v = verdict[index(cand)];
      const bool still_open = std::find(open.begin(), open.end(), cand) != open.end() && open.size() > 1;
      // Appended: an earlier phase's note (why its model did not exclude it, say) still holds.
      const std::string note = "contender: timed round-robin, " + fmt_count(cand->samples.size()) +
                               " interleaved samples" +
                               (v == Verdict::separated ? ", separated from the best"
                                : v == Verdict::tie     ? ", a tie with the best"
                                : still_open            ? ", not separated within the bounds"
                                                        : "");
      cand->result.note += (cand->result.note.empty() ? "" : "; ") + note;
    }
  }
  // Every kernel goes now: the ordering needs only the times, and the buffers may be large.
  for (Candidate& cand : cands) cand.kernel.reset();
}

}  // namespace vgpu::detail::calibration
