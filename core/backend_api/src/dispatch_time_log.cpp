// SPDX-License-Identifier: Apache-2.0
// core/backend_api/src/dispatch_time_log.cpp — the bounded log of a device's dispatch times.
#include "vgpu/backend/dispatch_time_log.hpp"

#include "vgpu/backend/device_impl.hpp"

#include <utility>

namespace vgpu {

void DispatchTimeLog::add(DispatchTime time) noexcept {
  std::lock_guard lock(mutex_);
  try {
    if (times_.size() >= kCapacity) times_.pop_front();
    times_.push_back(std::move(time));
  } catch (...) {  // out of memory: a time is a courtesy, the work it measured has run
  }
}

std::vector<DispatchTime> DispatchTimeLog::recent() const {
  std::lock_guard lock(mutex_);
  return {times_.begin(), times_.end()};
}

void DispatchTimeLog::clear() noexcept {
  std::lock_guard lock(mutex_);
  times_.clear();
}

void DeviceImpl::report_dispatch_time(const std::string& kernel, std::uint64_t begin_ns,
                                      std::uint64_t end_ns) noexcept {
  if (end_ns < begin_ns) end_ns = begin_ns;
  counters().timed_dispatches.fetch_add(1, std::memory_order_relaxed);
  counters().device_ns.fetch_add(end_ns - begin_ns, std::memory_order_relaxed);
  if (!time_log_) return;
  try {
    time_log_->add(DispatchTime{kernel, begin_ns, end_ns});
  } catch (...) {  // no memory for the name: the counters above still have it
  }
}

}  // namespace vgpu
