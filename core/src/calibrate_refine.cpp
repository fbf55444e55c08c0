// SPDX-License-Identifier: Apache-2.0
// core/src/calibrate_refine.cpp — calibration phase 4: round-robin among close contenders.
#include "calibration.hpp"

namespace vgpu::detail::calibration {

void refine_close(std::vector<Candidate>& cands, double best, HostDataPool& data) {
  std::vector<Candidate*> close;
  for (Candidate& cand : cands)
    if (cand.kernel && cand.result.runs > 0 && cand.result.seconds <= kCloseFactor * best) close.push_back(&cand);
  if (close.size() > 1) {
    const auto t0 = Clock::now();
    // One sample each per round, so drift hits all alike; bounded in rounds and in time. Each
    // sample is the second of two back-to-back calls: the first pays for switching from the
    // device timed just before (two APIs on one GPU switch contexts, ~100 us on the H200, which
    // made CUDA and Vulkan read 2x slower than alone and lose matmul 256 to the unrefined CPU).
    for (int round = 0; round < kRefineRounds && seconds_since(t0) < kRefineBudget; ++round)
      for (Candidate* cand : close) {
        CallData& args = data.for_plan(cand->plan);
        (*cand->kernel)(args.args);
        const auto t = Clock::now();
        (*cand->kernel)(args.args);
        cand->times.push_back(seconds_since(t));
      }
    for (Candidate* cand : close) {
      cand->result.seconds = median(cand->times);  // over all samples
      cand->result.runs = static_cast<int>(cand->times.size());
      cand->result.note = "close to the best: timed again round-robin";
    }
  }
  // Every kernel goes now: the ordering needs only the times, and the buffers may be large.
  for (Candidate& cand : cands) cand.kernel.reset();
}

}  // namespace vgpu::detail::calibration
