// SPDX-License-Identifier: Apache-2.0
// core/backend_api/src/deadline.cpp — deadlines on the coarse monotonic clock, the timeout error, and
// CpuWorkgroup::expired(), the polling pause.
#include "vgpu/backend/deadline.hpp"

#include <algorithm>
#include <string>
#include <thread>

#include "vgpu/error.hpp"
#include "vgpu/kernel_source.hpp"

namespace vgpu {

void pause_while_polling(Deadline::Clock::time_point start) {
  const auto waited = std::chrono::steady_clock::now() - start;
  if (waited < std::chrono::microseconds(200))
    std::this_thread::yield();
  else
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(waited / 16, std::chrono::milliseconds(1)));
}

Deadline Deadline::after(std::chrono::milliseconds limit) noexcept {
  Deadline d;
  if (limit.count() <= 0) return d;
  const Clock::time_point start = now();
  // Saturate: a limit of decades must not overflow into the past.
  const auto room = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - start);
  d.when_ = limit >= room ? Clock::time_point::max() - Clock::duration(1) : start + limit;
  d.limit_ = limit;
  return d;
}

std::chrono::nanoseconds Deadline::remaining() const noexcept {
  if (!limited()) return std::chrono::nanoseconds::max();
  const Clock::time_point t = now();
  return t >= when_ ? std::chrono::nanoseconds(0) : std::chrono::duration_cast<std::chrono::nanoseconds>(when_ - t);
}

std::uint64_t Deadline::remaining_ns() const noexcept {
  if (!limited()) return UINT64_MAX;
  return static_cast<std::uint64_t>(remaining().count());
}

void fail_timeout(const DeviceInfo& device, const Deadline& deadline, std::string_view what, bool lost) {
  std::string problem = std::string(to_string(device.backend)) + " device '" + device.name + "' (" + device.id() +
                        ") ran past its time limit of " + std::to_string(deadline.limit().count()) + " ms while " +
                        std::string(what);
  problem += lost ? "; its work is still running, so the device is now lost (the next call on it recreates it "
                    "in place)."
                  : "; nothing of that work is still running and the device stays usable, but the call's results are "
                    "incomplete.";
  std::string fix =
      "raise the limit (VGPU_TIMEOUT_MS, Device::set_timeout, or the call's own timeout argument; 0 = no limit), "
      "split the work into smaller dispatches, or check the kernel for an endless loop";
  fix += lost ? "; the next call on the Device recreates it (write the buffers you filled again)." : ".";
  fail(ErrorCategory::timeout, problem, fix);
}

bool CpuWorkgroup::expired() const noexcept {
  if (control == nullptr) return false;
  if (control->stop.load(std::memory_order_relaxed)) return true;
  if (!control->deadline.expired()) return false;
  control->stop.store(true, std::memory_order_relaxed);  // no further workgroup starts
  return true;
}

}  // namespace vgpu
