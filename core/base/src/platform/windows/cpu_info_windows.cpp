// SPDX-License-Identifier: Apache-2.0
// core/base/src/platform/windows/cpu_info_windows.cpp — the CPU's features, caches and name on
// Windows x86-64 without the cpuinfo library: CPUID with XGETBV (the registers the OS saves)
// and GetLogicalProcessorInformationEx (the caches). Built instead of cpu_info.cpp when a
// Windows build finds no cpuinfo (cmake/VgpuDependencies.cmake: VGPU_HAVE_CPUINFO); the same
// facts, read the way cpuinfo reads them on x86.
#include <windows.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "../../trim.hpp"
#include "../x86_cpuid.hpp"  // x86 only: a non-x86 Windows build needs cpuinfo (cmake/VgpuDependencies.cmake)
#include "vgpu/platform/system_info.hpp"

namespace vgpu::platform {
namespace {

using x86::bit;
using x86::cpuid;
using x86::CpuidRegs;

CpuFeatures read_features() noexcept {
  CpuFeatures f;
  const std::uint32_t max_leaf = cpuid(0).eax;
  if (max_leaf < 1) return f;
  const CpuidRegs l1 = cpuid(1);
  const CpuidRegs l7 = max_leaf >= 7 ? cpuid(7, 0) : CpuidRegs{};
  const CpuidRegs l7s1 = max_leaf >= 7 && l7.eax >= 1 ? cpuid(7, 1) : CpuidRegs{};
  // x86-64 Windows always saves the SSE registers; AVX needs XMM+YMM state (XCR0 bits 1-2),
  // AVX-512 also opmask and ZMM state (bits 5-7), as cpuinfo checks them.
  const std::uint64_t xcr = x86::xcr0();
  const bool avx_state = (xcr & 0x6U) == 0x6U;
  const bool avx512_state = (xcr & 0xE6U) == 0xE6U;
  f.x86_sse2 = bit(l1.edx, 26);
  f.x86_sse3 = bit(l1.ecx, 0);
  f.x86_ssse3 = bit(l1.ecx, 9);
  f.x86_sse4_1 = bit(l1.ecx, 19);
  f.x86_sse4_2 = bit(l1.ecx, 20);
  f.x86_avx = avx_state && bit(l1.ecx, 28);
  f.x86_fma3 = avx_state && bit(l1.ecx, 12);
  f.x86_f16c = avx_state && bit(l1.ecx, 29);
  f.x86_avx2 = avx_state && bit(l7.ebx, 5);
  f.x86_avx512f = avx512_state && bit(l7.ebx, 16);
  f.x86_avx512dq = avx512_state && bit(l7.ebx, 17);
  f.x86_avx512cd = avx512_state && bit(l7.ebx, 28);
  f.x86_avx512bw = avx512_state && bit(l7.ebx, 30);
  f.x86_avx512vl = avx512_state && bit(l7.ebx, 31);
  f.x86_avx512bf16 = avx512_state && bit(l7s1.eax, 5);
  x86::read_amx(f);
  return f;
}

CpuIdentity read_identity() {
  CpuIdentity id;
  const CpuidRegs l0 = cpuid(0);
  char vendor[13] = {};
  std::memcpy(vendor, &l0.ebx, 4);
  std::memcpy(vendor + 4, &l0.edx, 4);
  std::memcpy(vendor + 8, &l0.ecx, 4);
  if (vendor[0] != '\0') id.vendor = vendor;
  // The brand string: leaves 0x80000002-4, 48 characters, NUL-padded.
  if (cpuid(0x80000000U).eax >= 0x80000004U) {
    char brand[49] = {};
    for (std::uint32_t i = 0; i < 3; ++i) {
      const CpuidRegs r = cpuid(0x80000002U + i);
      std::memcpy(brand + 16 * i, &r, 16);
    }
    if (std::string model(detail::trim(brand)); !model.empty()) id.model = std::move(model);
  }
  return id;
}

/// The size of the first data (or unified) cache at `level` the OS lists, or 0.
std::size_t read_cache_bytes(int level) noexcept {
  DWORD bytes = 0;
  ::GetLogicalProcessorInformationEx(RelationCache, nullptr, &bytes);
  if (bytes == 0) return 0;
  std::vector<unsigned char> buffer;
  try {
    buffer.resize(bytes);
  } catch (...) {
    return 0;
  }
  auto* info = reinterpret_cast<SYSTEM_LOGICAL_PROCESSOR_INFORMATION_EX*>(buffer.data());
  if (!::GetLogicalProcessorInformationEx(RelationCache, info, &bytes)) return 0;
  for (DWORD at = 0; at < bytes;) {
    const auto* entry = reinterpret_cast<const SYSTEM_LOGICAL_PROCESSOR_INFORMATION_EX*>(buffer.data() + at);
    if (entry->Size == 0) break;
    const CACHE_RELATIONSHIP& c = entry->Cache;
    if (entry->Relationship == RelationCache && c.Level == level && (c.Type == CacheData || c.Type == CacheUnified))
      return static_cast<std::size_t>(c.CacheSize);
    at += entry->Size;
  }
  return 0;
}

}  // namespace

const CpuFeatures& cpu_features() noexcept {
  static const CpuFeatures features = read_features();
  return features;
}

const CpuIdentity& cpu_identity() noexcept {
  static const CpuIdentity identity = [] {
    try {
      return read_identity();
    } catch (...) {  // out of memory for a short string: the defaults
      return CpuIdentity{};
    }
  }();
  return identity;
}

std::size_t cpu_cache_bytes(int level) noexcept {
  if (level < 1 || level > 3) return 0;
  static const std::size_t sizes[3] = {read_cache_bytes(1), read_cache_bytes(2), read_cache_bytes(3)};
  return sizes[level - 1];
}

}  // namespace vgpu::platform
