// SPDX-License-Identifier: Apache-2.0
// vgpu/version.hpp — library and cache-format versions.
#pragma once

#include <cstdint>

namespace vgpu {

/// Library version, major.minor.patch.
inline constexpr int kVersionMajor = 0, kVersionMinor = 1, kVersionPatch = 0;
/// Version of every cache key and on-disk entry layout; bump it to invalidate all caches.
inline constexpr std::uint32_t kCacheFormatVersion = 2;

}  // namespace vgpu
