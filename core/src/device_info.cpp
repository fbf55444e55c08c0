// core/src/device_info.cpp — DeviceInfo helpers and fingerprint construction.
#include "vgpu/device_info.hpp"

#include <cstdio>

#include "vgpu/backend/fingerprint.hpp"
#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/version.hpp"

namespace vgpu {

std::string DeviceFingerprint::hex() const {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(hash));
  return buf;
}

std::string DeviceInfo::id() const { return std::string(to_string(backend)) + ":" + std::to_string(index); }

DeviceFingerprint make_fingerprint(const std::vector<std::pair<std::string, std::string>>& facts) {
  DeviceFingerprint fp;
  for (const auto& [key, value] : facts) fp.text += key + "=" + value + ";";
  fp.text += "vgpu_cache_format=" + std::to_string(kCacheFormatVersion);
  fp.hash = cache::hash64(fp.text);
  return fp;
}

}  // namespace vgpu
