// SPDX-License-Identifier: Apache-2.0
// core/base/src/device_info.cpp — DeviceInfo helpers (make_fingerprint is in fingerprint.cpp).
#include "vgpu/device_info.hpp"

#include <cstdio>

namespace vgpu {

std::string DeviceFingerprint::hex() const {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(hash));
  return buf;
}

std::string DeviceInfo::id() const { return std::string(to_string(backend)) + ":" + std::to_string(index); }

}  // namespace vgpu
