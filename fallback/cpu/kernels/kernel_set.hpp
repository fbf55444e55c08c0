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

/// Returns the table of Arch's kernels, named isa; a constant expression, so the tables need
/// no dynamic initialisation.
template <class Arch>
constexpr KernelTable make_table(std::string_view isa) {
  return KernelTable{isa,
                     {{{"matmul", &Matmul<Arch>::run},
                       {"matmul_batched", &Matmul<Arch>::run_batched},
                       {"axpy", &Elementwise<Arch>::axpy},
                       {"add", &Elementwise<Arch>::add},
                       {"mul", &Elementwise<Arch>::mul},
                       {"reduce_sum", &Reduce<Arch>::run},
                       {"softmax_rows", &Softmax<Arch>::run},
                       {"convert_widen", &Convert<Arch>::widen},
                       {"convert_narrow", &Convert<Arch>::narrow}}}};
}

}  // namespace vgpu::cpu::builtin

/// Defines vgpu::cpu::fn() (declared in kernels/builtin_table.hpp), returning the constant
/// table of Arch's kernels named isa: the one definition each per-ISA translation unit makes.
#define VGPU_CPU_DEFINE_KERNEL_TABLE(fn, Arch, isa)                      \
  namespace vgpu::cpu {                                                  \
  const KernelTable& fn() noexcept {                                     \
    static constexpr KernelTable table = builtin::make_table<Arch>(isa); \
    return table;                                                        \
  }                                                                      \
  }
