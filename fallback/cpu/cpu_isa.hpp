// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/cpu_isa.hpp — which SIMD instruction set the CPU backend's built-in kernels use.
// The kernels are compiled once per ISA; the best one the CPU and OS support is chosen at run
// time, unless the runtime's settings (RuntimeOptions::cpu_isa, else VGPU_CPU_ISA: portable,
// sse2, avx2 or avx512 on x86-64; portable or neon64 on AArch64) name one. Thread-safety: every function is safe to
// call from several threads.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kernels/builtin_table.hpp"

namespace vgpu::cpu {

/// Returns the kernel table of the ISA named forced, or of the best one this CPU and OS support
/// when forced is empty. from_code: the name came from RuntimeOptions::cpu_isa, and an unknown
/// one throws invalid_argument; from VGPU_CPU_ISA it is a warning and the best ISA is used. A
/// known ISA this machine cannot run throws not_supported (from VGPU_CPU_ISA also logged).
const KernelTable& resolve_kernels(std::string_view forced, bool from_code);

/// Returns the ISA the process's CPU backend uses by default (VGPU_CPU_ISA through
/// vgpu::config(), else the best): "sse2", "avx2", "avx512"; throws like resolve_kernels.
std::string_view selected_isa();

/// Returns the CPU feature flags relevant to the kernels, usable on this OS ("sse2", "avx2",
/// "fma", "avx512f", ...), for DeviceInfo::features.
std::vector<std::string> cpu_features();

}  // namespace vgpu::cpu
