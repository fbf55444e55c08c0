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

std::string cpu_identity(const CpuKernel& cpu) {
  if (!cpu.builtin.empty()) return "builtin:" + cpu.builtin;
  // A callable's type name is unique per lambda/function type within the program.
  return std::string("callable:") + (cpu.fn ? cpu.fn.target_type().name() : "none");
}

}  // namespace

std::string KernelKey::hex() const {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return buf;
}

KernelKey make_kernel_key(const KernelSource& source, Dialect dialect, const CompileOptions& options,
                          const DeviceFingerprint& fingerprint) {
  std::string text;
  text.reserve(256 + source.glsl.size() + source.cuda.size());
  put(text, "vgpu-kernel");
  put(text, std::uint64_t{kCacheFormatVersion});
  put(text, source.name);
  put(text, std::uint64_t(static_cast<int>(dialect)));
  switch (dialect) {
    case Dialect::glsl: put(text, source.glsl); break;
    case Dialect::cuda:
      put(text, source.cuda);
      put(text, source.cuda_entry);
      break;
    case Dialect::cpu:
      put(text, cpu_identity(source.cpu));
      put(text, source.cpu.version);
      break;
  }
  put(text, std::uint64_t{options.defines.size()});
  for (const auto& [name, value] : options.defines) {
    put(text, name);
    put(text, value);
  }
  for (auto v : options.workgroup_size) put(text, std::uint64_t{v});
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
