// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/kernels/kernels_avx512.cpp — built-in kernels for AVX-512 (F/BW/VL/DQ) + FMA
// (Skylake-SP and later). CMake compiles this file alone with the AVX-512 flags; it runs
// only after cpu_isa.cpp has checked that the CPU and OS support them.
// GCC 12 reports -W(maybe-)uninitialized inside its own avx512fintrin.h (the deliberately
// undefined pass-through operand of _mm512_undefined_ps, inlined from xsimd); it is a false
// positive in the compiler's header, so it is silenced for this file only.
#pragma GCC diagnostic push
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "kernels/kernel_set.hpp"

#if !XSIMD_WITH_AVX512BW
#error "kernels_avx512.cpp must be compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma"
#endif

#if VGPU_CPU_AMX_KERNELS
#include "kernels/matmul_amx.hpp"
VGPU_CPU_DEFINE_KERNEL_TABLE(avx512_kernels, xsimd::avx512bw, "avx512", &amx_bf16_matmul, &amx_bf16_matmul_batched)
#else
VGPU_CPU_DEFINE_KERNEL_TABLE(avx512_kernels, xsimd::avx512bw, "avx512")
#endif

#pragma GCC diagnostic pop
