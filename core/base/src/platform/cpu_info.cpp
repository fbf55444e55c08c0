// SPDX-License-Identifier: Apache-2.0
// core/base/src/platform/cpu_info.cpp — the CPU's features, caches and name through the cpuinfo
// library (x86: CPUID with XGETBV; ARM: the kernel's hardware capabilities), on every OS.
#include <cpuinfo.h>

#include <fstream>
#include <string>
#include <string_view>

#include "../trim.hpp"
#include "vgpu/platform/system_info.hpp"
#if defined(__x86_64__) || defined(_M_X64)
#define VGPU_PLATFORM_X86_64 1
#include "x86_cpuid.hpp"
#endif

namespace vgpu::platform {
namespace {

/// Initializes cpuinfo once; false when it cannot read this machine (an emulator, a sandbox
/// without /proc or /sys): callers then fall back to baselines.
bool cpuinfo_ready() noexcept {
  static const bool ready = cpuinfo_initialize();
  return ready;
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
    const std::string key(detail::trim(std::string_view(line).substr(0, colon)));
    const std::string value(detail::trim(std::string_view(line).substr(colon + 1)));
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
  x86::read_amx(f);
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
