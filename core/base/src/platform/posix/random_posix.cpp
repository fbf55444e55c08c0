// SPDX-License-Identifier: Apache-2.0
// core/base/src/platform/posix/random_posix.cpp — the OS's random bytes on Linux (getrandom)
// and macOS/BSD (arc4random_buf).
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__linux__)
#include <sys/random.h>
#endif
#include <unistd.h>

#include "vgpu/platform/random.hpp"

namespace vgpu::platform {

bool random_bytes(void* out, std::size_t n) noexcept {
#if defined(__linux__)
  auto* p = static_cast<unsigned char*>(out);
  std::size_t done = 0;
  while (done < n) {
    const ssize_t r = ::getrandom(p + done, n - done, 0);
    if (r <= 0) break;
    done += static_cast<std::size_t>(r);
  }
  if (done == n) return true;
  // No entropy call (a very old kernel or a seccomp filter): bytes unique to this process and
  // call, enough where an exclusive create guards the name.
  static std::atomic<std::uint64_t> counter{0};
  std::uint64_t mix = (static_cast<std::uint64_t>(::getpid()) << 32) ^ reinterpret_cast<std::uintptr_t>(out) ^
                      (++counter * 0x9e3779b97f4a7c15ull);
  for (std::size_t i = done; i < n; ++i, mix = mix * 6364136223846793005ull + 1442695040888963407ull)
    p[i] = static_cast<unsigned char>(mix >> 56);
  return false;
#else
  ::arc4random_buf(out, n);  // never fails
  return true;
#endif
}

}  // namespace vgpu::platform
