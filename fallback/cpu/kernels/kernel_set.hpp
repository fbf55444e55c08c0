// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/kernels/kernel_set.hpp — instantiates every built-in kernel template for one
// xsimd architecture. Included only by the per-ISA translation units (kernels_*.cpp).
#pragma once

#include <string_view>

#include "kernels/builtin_table.hpp"
#include "kernels/convert.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/matmul.hpp"
#include "kernels/reduce.hpp"
#include "kernels/softmax.hpp"

namespace vgpu::cpu::builtin {

/// Returns the table of Arch's kernels, named isa, with amx_bf16 and amx_bf16_batched (null:
/// none) as its "matmul_bf16_amx" and "matmul_batched_bf16_amx"; a constant expression, so the
/// tables need no dynamic initialisation.
template <class Arch>
constexpr KernelTable make_table(std::string_view isa, BuiltinFn amx_bf16 = nullptr,
                                 BuiltinFn amx_bf16_batched = nullptr) {
  return KernelTable{isa,
                     {{{"matmul", &Matmul<Arch>::run},
                       {"matmul_batched", &Matmul<Arch>::run_batched},
                       {"axpy", &Elementwise<Arch>::axpy},
                       {"add", &Elementwise<Arch>::add},
                       {"mul", &Elementwise<Arch>::mul},
                       {"reduce_sum", &Reduce<Arch>::run},
                       {"softmax_rows", &Softmax<Arch>::run},
                       {"convert_widen", &Convert<Arch>::widen},
                       {"convert_narrow", &Convert<Arch>::narrow},
                       {"matmul_bf16_amx", amx_bf16},
                       {"matmul_batched_bf16_amx", amx_bf16_batched}}}};
}

}  // namespace vgpu::cpu::builtin

/// Defines vgpu::cpu::fn() (declared in kernels/builtin_table.hpp), returning the constant
/// table of Arch's kernels named isa (and, as further arguments, the AMX matmul): the one
/// definition each per-ISA translation unit makes.
#define VGPU_CPU_DEFINE_KERNEL_TABLE(fn, Arch, ...)                              \
  namespace vgpu::cpu {                                                          \
  const KernelTable& fn() noexcept {                                             \
    static constexpr KernelTable table = builtin::make_table<Arch>(__VA_ARGS__); \
    return table;                                                                \
  }                                                                              \
  }
