// SPDX-License-Identifier: Apache-2.0
// core/base/src/platform/x86_cpuid.hpp — the platform layer's one reader of x86 CPUID and XCR0,
// for every compiler (MSVC intrinsics, GCC/Clang's cpuid.h): what cpuinfo does not read (AMX)
// and, on Windows builds without cpuinfo, everything (windows/cpu_info_windows.cpp). Internal to the platform layer;
// x86 only.
#pragma once

#if !defined(__x86_64__) && !defined(_M_X64) && !defined(__i386__) && !defined(_M_IX86)
#error "x86_cpuid.hpp reads CPUID: include it on x86 only. Fix: guard the include with the x86 architecture macros"
#endif

#if defined(_MSC_VER)
#include <intrin.h>
#else
#include <cpuid.h>
#endif

#include <cstdint>

#include "vgpu/platform/system_info.hpp"

namespace vgpu::platform::x86 {

/// One CPUID answer.
struct CpuidRegs {
  std::uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

/// CPUID leaf `leaf`, sub-leaf `sub` (the caller checks the leaf is within leaf 0's maximum).
inline CpuidRegs cpuid(std::uint32_t leaf, std::uint32_t sub = 0) noexcept {
  CpuidRegs r;
#if defined(_MSC_VER)
  int regs[4] = {};
  __cpuidex(regs, static_cast<int>(leaf), static_cast<int>(sub));
  r = {static_cast<std::uint32_t>(regs[0]), static_cast<std::uint32_t>(regs[1]), static_cast<std::uint32_t>(regs[2]),
       static_cast<std::uint32_t>(regs[3])};
#else
  __cpuid_count(leaf, sub, r.eax, r.ebx, r.ecx, r.edx);
#endif
  return r;
}

/// Bit n of v.
constexpr bool bit(std::uint32_t v, int n) noexcept { return ((v >> n) & 1U) != 0; }

/// XCR0, which register states the OS saves on a context switch; 0 where the OS has not
/// enabled XSAVE (CPUID.1:ECX.OSXSAVE clear), when XGETBV would fault. Inline assembly, so
/// no -mxsave is needed.
inline std::uint64_t xcr0() noexcept {
  if (cpuid(0).eax < 1 || !bit(cpuid(1).ecx, 27)) return 0;
#if defined(_MSC_VER)
  return _xgetbv(0);
#else
  std::uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<std::uint64_t>(hi) << 32) | lo;
#endif
}

/// Sets f's AMX fields: tiles and their bfloat16 dot products are usable only where the CPU
/// has them (CPUID.7.0:EDX bits 24 and 22) and the OS saves both tile components (XCR0 bits
/// 17-18: XTILECFG and XTILEDATA).
inline void read_amx(CpuFeatures& f) noexcept {
  if (cpuid(0).eax < 7) return;
  const CpuidRegs l7 = cpuid(7, 0);
  const bool tile_state = ((xcr0() >> 17) & 3U) == 3U;
  f.x86_amx_tile = tile_state && bit(l7.edx, 24);
  f.x86_amx_bf16 = f.x86_amx_tile && bit(l7.edx, 22);
}

}  // namespace vgpu::platform::x86
