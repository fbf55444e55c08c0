// SPDX-License-Identifier: Apache-2.0
// core/backend_api/src/device_settle.cpp — DeviceImpl::settle: the bounded last wait before a backend
// frees its objects, and the leak-don't-free rule when that wait gives up.
#include <string>

#include "vgpu/backend/device_impl.hpp"
#include "vgpu/log.hpp"

namespace vgpu {

bool DeviceImpl::settle(std::string_view api, std::string_view left,
                        const std::function<bool(const Deadline&)>& drain) noexcept {
  if (abandoned_) return false;
  const Deadline deadline = default_deadline();
  std::string why;
  try {
    if (drain(deadline)) return true;
    why = "its work was still running after " + std::to_string(deadline.limit().count()) + " ms";
  } catch (const std::exception& e) {
    why = e.what();
  }
  mark_lost(why);
  abandoned_ = true;
  try {
    log(LogLevel::warn, std::string(api) + " device '" + info().name + "' is lost (" + why + "): its " +
                            std::string(left) +
                            " are left to the driver, not freed under work that may still use them.");
  } catch (...) {  // out of memory for the line: the device is leaked either way
  }
  return false;
}

}  // namespace vgpu
