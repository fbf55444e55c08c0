// SPDX-License-Identifier: Apache-2.0
// cache/src/kernel_key.cpp — canonical serialisation + xxHash3 of a kernel's identity.
#include "vgpu/cache/kernel_key.hpp"

#include <xxhash.h>

#include <cstdio>
#include <string>

#include "vgpu/version.hpp"

namespace vgpu::cache {
namespace {

// Length-prefixed fields make the serialisation unambiguous ("ab"+"c" differs from "a"+"bc").
void put(std::string& out, std::string_view field) {
  const std::uint64_t n = field.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  out.append(field);
}

void put(std::string& out, std::uint64_t value) { put(out, std::string_view(std::to_string(value))); }

// A callable's type name is unique per lambda/function type within the program; its captured
// state cannot be hashed (hence DialectSource::version).
std::string_view fn_identity(const CpuKernelFn& fn) { return fn ? fn.target_type().name() : ""; }

}  // namespace

std::string KernelKey::hex() const {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return buf;
}

std::optional<KernelKey> KernelKey::from_hex(std::string_view hex) noexcept {
  if (hex.size() != 32) return std::nullopt;
  std::uint64_t half[2] = {0, 0};
  for (std::size_t i = 0; i < 32; ++i) {
    const char c = hex[i];
    std::uint64_t d;
    if (c >= '0' && c <= '9')
      d = static_cast<std::uint64_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      d = static_cast<std::uint64_t>(c - 'a' + 10);
    else
      return std::nullopt;
    half[i / 16] = (half[i / 16] << 4) | d;
  }
  return KernelKey{half[0], half[1]};
}

KernelKey make_kernel_key(const KernelSource& source, const DialectSource& code, const CompileOptions& options,
                          const DeviceFingerprint& fingerprint) {
  std::string text;
  text.reserve(256 + code.code.size());
  put(text, "vgpu-kernel");
  put(text, std::uint64_t{kCacheFormatVersion});
  put(text, source.name);
  // The one dialect entry this device compiles; the kernel's other entries do not change it.
  put(text, code.dialect);
  put(text, code.code);
  put(text, code.entry);
  put(text, fn_identity(code.fn));
  put(text, code.version);
  put(text, std::uint64_t{options.defines.size()});
  for (const auto& [name, value] : options.defines) {
    put(text, name);
    put(text, value);
  }
  // As given: unset ({0, 0, 0}) is its own value (the backend resolves it to the shader's own
  // local size or the default), so it never shares a key with an explicit 64x1x1.
  for (auto v : options.workgroup_size) put(text, std::uint64_t{v});
  put(text, std::uint64_t{options.spec_constants.size()});
  for (const auto& c : options.spec_constants) {
    put(text, c.id ? std::uint64_t{*c.id} : ~std::uint64_t{0});
    put(text, c.name);
    put(text, std::uint64_t(static_cast<int>(c.value.type)) << 32 | c.value.bits);
  }
  put(text, std::uint64_t{source.bindings.size()});
  for (const auto& b : source.bindings) {
    put(text, std::uint64_t{b.slot});
    put(text, std::uint64_t(static_cast<int>(b.access)));
  }
  put(text, std::uint64_t{source.params_size});
  put(text, fingerprint.text);
  const XXH128_hash_t h = XXH3_128bits(text.data(), text.size());
  return KernelKey{h.high64, h.low64};
}

std::uint64_t hash64(std::string_view bytes) noexcept { return XXH3_64bits(bytes.data(), bytes.size()); }

}  // namespace vgpu::cache
