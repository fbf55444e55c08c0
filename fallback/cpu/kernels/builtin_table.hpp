// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/kernels/builtin_table.hpp — the table of built-in CPU kernels one ISA provides.
// Declares one table per compiled ISA; cpu_isa.cpp chooses among them at run time.
#pragma once

#include <array>
#include <string_view>

#include "vgpu/kernel_source.hpp"

namespace vgpu::cpu {

/// A built-in kernel body, called once per workgroup (a tile or chunk).
using BuiltinFn = void (*)(const CpuWorkgroup&);

/// One named built-in kernel.
struct BuiltinEntry {
  std::string_view name;
  BuiltinFn fn = nullptr;
};

/// Every built-in kernel of one ISA. Immutable (constant-initialised); thread-safe.
struct KernelTable {
  std::string_view isa;                  ///< "sse2", "avx2", "avx512", or the native arch's name off x86
  std::array<BuiltinEntry, 11> entries;  ///< the AMX matmuls have no fn where the set lacks them

  /// Returns the kernel called name, or nullptr when this table has none.
  constexpr BuiltinFn find(std::string_view name) const noexcept {
    for (const BuiltinEntry& e : entries)
      if (e.name == name) return e.fn;
    return nullptr;
  }
};

/// Returns the kernels written without SIMD intrinsics (kernels/portable_batch.hpp): built on
/// every architecture, the only set where vgpu has no tuned one.
const KernelTable& portable_kernels() noexcept;

#if VGPU_CPU_X86_KERNELS
/// Returns the kernels compiled for baseline x86-64 (SSE2).
const KernelTable& sse2_kernels() noexcept;
/// Returns the kernels compiled with -mavx2 -mfma.
const KernelTable& avx2_kernels() noexcept;
/// Returns the kernels compiled with -mavx512f/bw/vl/dq -mfma.
const KernelTable& avx512_kernels() noexcept;
#elif VGPU_CPU_NATIVE_KERNELS
/// Returns the kernels compiled for the target's baseline SIMD (NEON on AArch64).
const KernelTable& native_kernels() noexcept;
#endif

}  // namespace vgpu::cpu
