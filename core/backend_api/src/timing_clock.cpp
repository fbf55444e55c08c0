// SPDX-License-Identifier: Apache-2.0
// core/backend_api/src/timing_clock.cpp — the steady TimingClock, the clock of every real device.
#include "vgpu/backend/timing_clock.hpp"

namespace vgpu {
namespace {

class SteadyClock final : public TimingClock {
 public:
  time_point now() const noexcept override { return std::chrono::steady_clock::now(); }
};

}  // namespace

const TimingClock& TimingClock::steady() noexcept {
  // Never destroyed: a background calibration may still read it while the process exits.
  static const auto* clock = new SteadyClock;
  return *clock;
}

}  // namespace vgpu
