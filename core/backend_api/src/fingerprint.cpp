// SPDX-License-Identifier: Apache-2.0
// core/backend_api/src/fingerprint.cpp — fingerprint construction (vgpu/backend/fingerprint.hpp).
#include "vgpu/backend/fingerprint.hpp"

#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/version.hpp"

namespace vgpu {

DeviceFingerprint make_fingerprint(const std::vector<std::pair<std::string, std::string>>& facts) {
  DeviceFingerprint fp;
  for (const auto& [key, value] : facts) fp.text += key + "=" + value + ";";
  fp.text += "vgpu_cache_format=" + std::to_string(kCacheFormatVersion);
  fp.hash = cache::hash64(fp.text);
  return fp;
}

}  // namespace vgpu
