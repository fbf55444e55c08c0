// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/kernels/kernels_sse2.cpp — built-in kernels for baseline x86-64 (SSE2).
// Compiled with the default flags; every x86-64 CPU runs it.
#include "kernels/kernel_set.hpp"

#if !XSIMD_WITH_SSE2
#error "kernels_sse2.cpp needs SSE2 (x86-64 baseline)"
#endif

VGPU_CPU_DEFINE_KERNEL_TABLE(sse2_kernels, xsimd::sse2, "sse2")
