// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/kernels/kernels_native.cpp — built-in kernels on AArch64, for its baseline SIMD
// as xsimd sees it at compile time (NEON, which every AArch64 CPU has). Run under qemu by
// `tools/dev.sh cross arm64`; the kernels are the same templates the x86 builds run. Other
// architectures get the portable set only (kernels_portable.cpp).
#include "kernels/kernel_set.hpp"

namespace vgpu::cpu {

#if XSIMD_WITH_NEON64
using NativeArch = xsimd::neon64;
#elif XSIMD_WITH_NEON
using NativeArch = xsimd::neon;
#else
#error "kernels_native.cpp is for AArch64 (NEON); fallback/cpu/CMakeLists.txt builds only the portable set elsewhere"
#endif

}  // namespace vgpu::cpu

VGPU_CPU_DEFINE_KERNEL_TABLE(native_kernels, NativeArch, NativeArch::name())
