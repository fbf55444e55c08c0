// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/kernels/kernels_native.cpp — built-in kernels off x86-64, for the target's
// baseline SIMD as xsimd sees it at compile time (NEON on AArch64). Untested on real hardware
// by this project; the kernels are the same templates the x86 builds run.
#include "kernels/kernel_set.hpp"

namespace vgpu::cpu {

#if XSIMD_WITH_NEON64
using NativeArch = xsimd::neon64;
#elif XSIMD_WITH_NEON
using NativeArch = xsimd::neon;
#else
#error "vgpu's CPU kernels need x86-64 or ARM NEON; no SIMD architecture xsimd 8.1 supports was found"
#endif

}  // namespace vgpu::cpu

VGPU_CPU_DEFINE_KERNEL_TABLE(native_kernels, NativeArch, NativeArch::name())
