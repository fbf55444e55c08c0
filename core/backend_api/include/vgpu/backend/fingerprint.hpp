// SPDX-License-Identifier: Apache-2.0
// vgpu/backend/fingerprint.hpp — building a DeviceFingerprint from key/value facts.
// Backend-author interface.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "vgpu/device_info.hpp"

namespace vgpu {

/// Builds a fingerprint from ordered (key, value) facts plus the vgpu cache-format version.
DeviceFingerprint make_fingerprint(const std::vector<std::pair<std::string, std::string>>& facts);

}  // namespace vgpu
