// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/kernels/kernels_avx2.cpp — built-in kernels for AVX2 + FMA (Haswell and later).
// CMake compiles this file alone with -mavx2 -mfma; it runs only after cpu_isa.cpp has
// checked that the CPU and OS support both.
#include "kernels/kernel_set.hpp"

#if !XSIMD_WITH_FMA3_AVX2
#error "kernels_avx2.cpp must be compiled with -mavx2 -mfma"
#endif

VGPU_CPU_DEFINE_KERNEL_TABLE(avx2_kernels, xsimd::fma3<xsimd::avx2>, "avx2")
