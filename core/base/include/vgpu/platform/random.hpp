// SPDX-License-Identifier: Apache-2.0
// vgpu/platform/random.hpp — random bytes from the OS (getrandom, arc4random_buf,
// BCryptGenRandom), for names no other writer can guess. Part of the platform layer
// (docs/platforms.md). Internal to vgpu.
//
// Thread-safety: thread-safe.
#pragma once

#include <cstddef>

namespace vgpu::platform {

/// Fills n bytes at out from the OS's random source; returns false (out then holds
/// process-unique but guessable bytes) when the OS gave none.
bool random_bytes(void* out, std::size_t n) noexcept;

}  // namespace vgpu::platform
