// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/kernels/kernels_portable.cpp — the built-in kernels without SIMD intrinsics
// (kernels/portable_batch.hpp): the only set on architectures vgpu has no tuned one for, and
// on every other one a choice (VGPU_CPU_ISA=portable) that the conformance suite checks.
// Compiled with the target's baseline flags only.
#include "kernels/kernel_set.hpp"

VGPU_CPU_DEFINE_KERNEL_TABLE(portable_kernels, builtin::PortableArch, builtin::PortableArch::name())
