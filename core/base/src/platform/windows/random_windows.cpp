// SPDX-License-Identifier: Apache-2.0
// core/base/src/platform/windows/random_windows.cpp — the OS's random bytes on Windows.
#include <windows.h>
// bcrypt.h after windows.h, which defines the types it uses.
#include <bcrypt.h>

#include <atomic>
#include <cstdint>

#include "vgpu/platform/random.hpp"

namespace vgpu::platform {

bool random_bytes(void* out, std::size_t n) noexcept {
  auto* p = static_cast<unsigned char*>(out);
  if (n <= 0xffffffffu &&
      BCRYPT_SUCCESS(::BCryptGenRandom(nullptr, p, static_cast<ULONG>(n), BCRYPT_USE_SYSTEM_PREFERRED_RNG)))
    return true;
  // Bytes unique to this process and call, enough where an exclusive create guards the name.
  static std::atomic<std::uint64_t> counter{0};
  std::uint64_t mix = (static_cast<std::uint64_t>(::GetCurrentProcessId()) << 32) ^
                      reinterpret_cast<std::uintptr_t>(out) ^ (++counter * 0x9e3779b97f4a7c15ull);
  for (std::size_t i = 0; i < n; ++i, mix = mix * 6364136223846793005ull + 1442695040888963407ull)
    p[i] = static_cast<unsigned char>(mix >> 56);
  return false;
}

}  // namespace vgpu::platform
