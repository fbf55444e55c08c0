// fallback/cpu/cpu_isa.hpp — which SIMD instruction set the CPU backend's built-in kernels use.
// The kernels are compiled once per ISA; the best one the CPU and OS support is chosen at run
// time, unless VGPU_CPU_ISA=sse2|avx2|avx512 overrides it. Exposed for tests and benchmarks.
// Thread-safety: every function is safe to call from several threads (the choice is made once).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "fallback/cpu/kernels/builtin_table.hpp"

namespace vgpu::cpu {

/// Returns the ISA the built-in kernels run with ("sse2", "avx2", "avx512"); throws
/// invalid_argument for an unknown VGPU_CPU_ISA, not_supported for one this CPU lacks.
std::string_view selected_isa();

/// Returns the ISAs this CPU and OS can run, worst first (e.g. {"sse2", "avx2", "avx512"}).
std::vector<std::string> supported_isas();

/// Returns the kernel table of the selected ISA (throws like selected_isa()).
const KernelTable& selected_kernels();

/// Returns the kernel table of a named ISA; throws invalid_argument for an unknown name and
/// not_supported for one this CPU lacks. Lets tests run every ISA in one process.
const KernelTable& kernels_for(std::string_view isa);

/// Returns the CPU feature flags relevant to the kernels, usable on this OS ("sse2", "avx2",
/// "fma", "avx512f", ...), for DeviceInfo::features.
std::vector<std::string> cpu_features();

}  // namespace vgpu::cpu
