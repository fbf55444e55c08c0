// SPDX-License-Identifier: Apache-2.0
// vgpu/platform/system_info.hpp — what the machine is: its CPU (name, vendor, instruction-set
// features with the OS's support for their registers, cache sizes; through the cpuinfo
// library), its memory, and each OS's per-user cache folder. Part of the platform layer
// (docs/platforms.md). Internal to vgpu.
//
// Thread-safety: every function is thread-safe; CPU facts are read once per process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace vgpu::platform {

/// The CPU's instruction-set features that vgpu's CPU kernels use; a feature is true only when
/// the CPU has it and the OS saves its registers (XGETBV on x86).
struct CpuFeatures {
  bool x86_sse2 = false, x86_sse3 = false, x86_ssse3 = false, x86_sse4_1 = false, x86_sse4_2 = false;
  bool x86_avx = false, x86_avx2 = false, x86_fma3 = false, x86_f16c = false;
  bool x86_avx512f = false, x86_avx512bw = false, x86_avx512dq = false, x86_avx512vl = false, x86_avx512cd = false,
       x86_avx512bf16 = false;
  /// AMX tiles with bfloat16 dot products (CPUID leaf 7, XCR0's tile state; cpuinfo 2022 does
  /// not know AMX). Before a thread uses tiles, enable_amx_tiles() must have succeeded.
  bool x86_amx_tile = false, x86_amx_bf16 = false;
  bool arm_neon = false, arm_fp16_arith = false, arm_bf16 = false;
};

/// What the CPU says of itself.
struct CpuIdentity {
  std::string vendor = "unknown";  ///< e.g. "AuthenticAMD", "GenuineIntel" (Linux: as /proc/cpuinfo says), "ARM"
  std::string model = "CPU";       ///< e.g. "AMD EPYC 7B13"
};

/// Returns the CPU's features (all false when the OS or cpuinfo cannot tell, e.g. under an
/// emulator: the baseline kernels then run).
const CpuFeatures& cpu_features() noexcept;

/// Returns the CPU's vendor and model (the defaults above where unknown).
const CpuIdentity& cpu_identity() noexcept;

/// Returns the data cache size per core at level 1, 2 or 3 in bytes (level 3: per package),
/// or 0 when unknown.
std::size_t cpu_cache_bytes(int level) noexcept;

/// Asks the OS to let this process use AMX tile data (Linux: arch_prctl ARCH_REQ_XCOMP_PERM,
/// since Linux 5.16; Windows enables it by itself); once per process, thread-safe. False when
/// the CPU has no AMX or the OS refuses (an older kernel): then no tile instruction may run.
bool enable_amx_tiles() noexcept;

/// Returns the physical memory in bytes, or 0 when the OS will not say.
std::uint64_t physical_memory_bytes() noexcept;

/// Returns the per-user cache folder of this OS — $XDG_CACHE_HOME or ~/.cache (Linux and
/// other POSIX), ~/Library/Caches (macOS), %LOCALAPPDATA% (Windows) — or an empty path when
/// there is none. vgpu's own folder goes below it.
std::filesystem::path user_cache_root();

}  // namespace vgpu::platform
