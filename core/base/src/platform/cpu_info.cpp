// SPDX-License-Identifier: Apache-2.0
// core/base/src/platform/cpu_info.cpp — the CPU's features, caches and name through the cpuinfo
// library (x86: CPUID with XGETBV; ARM: the kernel's hardware capabilities), on every OS.
#include <cpuinfo.h>

#if defined(__x86_64__) || defined(_M_X64)
#define VGPU_PLATFORM_X86_64 1
#if defined(_MSC_VER)
#include <intrin.h>
#else
#include <cpuid.h>
#endif
#endif

#include <fstream>
#include <string>
#include <string_view>

#include "vgpu/platform/system_info.hpp"

namespace vgpu::platform {
namespace {

/// Initializes cpuinfo once; false when it cannot read this machine (an emulator, a sandbox
/// without /proc or /sys): callers then fall back to baselines.
bool cpuinfo_ready() noexcept {
  static const bool ready = cpuinfo_initialize();
  return ready;
}

/// Returns s without leading and trailing blanks.
std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

/// Reads "model name" and "vendor_id" of the first processor from /proc/cpuinfo (the names
/// earlier vgpu releases put in CPU fingerprints, so existing caches stay warm); keeps the
/// fallbacks when the file or a field is missing.
CpuIdentity read_proc_cpuinfo() {
  CpuIdentity id;
  std::ifstream in("/proc/cpuinfo");
  bool have_model = false, have_vendor = false;
  for (std::string line; (!have_model || !have_vendor) && std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(std::string_view(line).substr(0, colon));
    const std::string value = trim(std::string_view(line).substr(colon + 1));
    if (value.empty()) continue;
    if (key == "model name" && !have_model) {
      id.model = value;
      have_model = true;
    } else if (key == "vendor_id" && !have_vendor) {
      id.vendor = value;
      have_vendor = true;
    }
  }
  return id;
}

/// Returns the vendor's name as cpuinfo knows it.
const char* vendor_name(cpuinfo_vendor v) {
  switch (v) {
    case cpuinfo_vendor_intel:
      return "GenuineIntel";
    case cpuinfo_vendor_amd:
      return "AuthenticAMD";
    case cpuinfo_vendor_arm:
      return "ARM";
    case cpuinfo_vendor_qualcomm:
      return "Qualcomm";
    case cpuinfo_vendor_apple:
      return "Apple";
    case cpuinfo_vendor_samsung:
      return "Samsung";
    case cpuinfo_vendor_nvidia:
      return "NVIDIA";
    case cpuinfo_vendor_cavium:
      return "Cavium";
    case cpuinfo_vendor_huawei:
      return "Huawei";
    default:
      return "unknown";
  }
}

CpuIdentity read_identity() {
  CpuIdentity id;
#if defined(__linux__)
  id = read_proc_cpuinfo();
  if (id.model != CpuIdentity{}.model) return id;
#endif
  if (!cpuinfo_ready()) return id;
  if (const cpuinfo_package* p = cpuinfo_get_package(0); p != nullptr && p->name[0] != '\0') id.model = p->name;
  if (const cpuinfo_core* c = cpuinfo_get_core(0); c != nullptr) id.vendor = vendor_name(c->vendor);
  return id;
}

#if VGPU_PLATFORM_X86_64
/// Reads AMX's CPUID bits and XCR0's tile state (cpuinfo 2022 predates AMX): tiles and
/// bfloat16 dot products are usable only where the OS has enabled both tile components.
void read_amx(CpuFeatures& f) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
#if defined(_MSC_VER)
  int r[4];
  __cpuid(r, 1);
  const bool osxsave = (static_cast<unsigned>(r[2]) >> 27) & 1;
  __cpuidex(r, 7, 0);
  edx = static_cast<unsigned>(r[3]);
  const unsigned long long xcr0 = osxsave ? _xgetbv(0) : 0;
#else
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return;
  const bool osxsave = (ecx >> 27) & 1;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return;
  unsigned lo = 0, hi = 0;
  if (osxsave) __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));  // no -mxsave needed
  const unsigned long long xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
#endif
  const bool tile_state = ((xcr0 >> 17) & 3) == 3;  // XTILECFG and XTILEDATA
  f.x86_amx_tile = tile_state && ((edx >> 24) & 1);
  f.x86_amx_bf16 = f.x86_amx_tile && ((edx >> 22) & 1);
}
#endif

CpuFeatures read_features() {
  CpuFeatures f;
  if (!cpuinfo_ready()) return f;
#if CPUINFO_ARCH_X86 || CPUINFO_ARCH_X86_64
  f.x86_sse2 = cpuinfo_has_x86_sse2();
  f.x86_sse3 = cpuinfo_has_x86_sse3();
  f.x86_ssse3 = cpuinfo_has_x86_ssse3();
  f.x86_sse4_1 = cpuinfo_has_x86_sse4_1();
  f.x86_sse4_2 = cpuinfo_has_x86_sse4_2();
  f.x86_avx = cpuinfo_has_x86_avx();
  f.x86_avx2 = cpuinfo_has_x86_avx2();
  f.x86_fma3 = cpuinfo_has_x86_fma3();
  f.x86_f16c = cpuinfo_has_x86_f16c();
  f.x86_avx512f = cpuinfo_has_x86_avx512f();
  f.x86_avx512bw = cpuinfo_has_x86_avx512bw();
  f.x86_avx512dq = cpuinfo_has_x86_avx512dq();
  f.x86_avx512vl = cpuinfo_has_x86_avx512vl();
  f.x86_avx512cd = cpuinfo_has_x86_avx512cd();
  f.x86_avx512bf16 = cpuinfo_has_x86_avx512bf16();
#endif
#if VGPU_PLATFORM_X86_64
  read_amx(f);
#endif
#if CPUINFO_ARCH_ARM || CPUINFO_ARCH_ARM64
  f.arm_neon = cpuinfo_has_arm_neon();
  f.arm_fp16_arith = cpuinfo_has_arm_neon_fp16_arith();
  f.arm_bf16 = cpuinfo_has_arm_bf16();
#endif
  return f;
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
    } catch (...) {  // an odd /proc/cpuinfo: the defaults
      return CpuIdentity{};
    }
  }();
  return identity;
}

std::size_t cpu_cache_bytes(int level) noexcept {
  if (!cpuinfo_ready()) return 0;
  const cpuinfo_cache* c = level == 1   ? cpuinfo_get_l1d_cache(0)
                           : level == 2 ? cpuinfo_get_l2_cache(0)
                           : level == 3 ? cpuinfo_get_l3_cache(0)
                                        : nullptr;
  return c != nullptr ? static_cast<std::size_t>(c->size) : 0;
}

}  // namespace vgpu::platform
