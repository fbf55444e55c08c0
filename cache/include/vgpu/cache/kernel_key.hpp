// SPDX-License-Identifier: Apache-2.0
// vgpu/cache/kernel_key.hpp — content-addressed keys for compiled kernels.
// Backend-author interface (cache/ is shared by core and backends).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "vgpu/device_info.hpp"
#include "vgpu/kernel_source.hpp"

namespace vgpu::cache {

/// A 128-bit xxHash3 of everything that decides what a compiled kernel is. A plain value.
struct KernelKey {
  std::uint64_t hi = 0, lo = 0;
  /// Returns 32 lower-case hex digits (the L2 file name).
  std::string hex() const;
  /// Parses hex()'s form (exactly 32 lower-case hex digits); nothing for any other text.
  static std::optional<KernelKey> from_hex(std::string_view hex) noexcept;
  friend bool operator==(const KernelKey&, const KernelKey&) = default;
};

/// Hashes KernelKey for unordered containers.
struct KernelKeyHash {
  /// Returns a size_t mix of the key (already uniformly distributed).
  std::size_t operator()(const KernelKey& key) const noexcept { return static_cast<std::size_t>(key.lo ^ key.hi); }
};

/// Returns the key of source's entry code (one of source.sources) compiled with options for the
/// fingerprinted device: name, code's dialect, text, entry point, callable type and version,
/// defines, workgroup size, binding topology, params size, cache-format version and
/// fingerprint. Never the name alone.
KernelKey make_kernel_key(const KernelSource& source, const DialectSource& code, const CompileOptions& options,
                          const DeviceFingerprint& fingerprint);

/// Returns the 64-bit xxHash3 of bytes.
std::uint64_t hash64(std::string_view bytes) noexcept;

}  // namespace vgpu::cache
