// SPDX-License-Identifier: Apache-2.0
// core/shader/toolchain/reflection_view.cpp — a copy of a module that SPIRV-Cross can reflect
// when the module uses instructions its version does not know. Debian 12's SPIRV-Cross
// (2021.01) stops at OpTypeCooperativeMatrixNV/KHR ("no block to insert opcode"), yet reflection
// reads only the interface: bindings, push constants, local size, spec constants, capabilities.
#include "toolchain_impl.hpp"
#include "vgpu/spirv_instructions.hpp"

#include <set>

namespace vgpu::toolchain::impl {
namespace {
constexpr std::uint32_t kOpTypeVector = 23, kOpConstantComposite = 44, kOpConstantNull = 46,
                        kOpSpecConstantComposite = 51, kOpUndef = 1, kOpFunction = 54, kOpFunctionParameter = 55,
                        kOpFunctionEnd = 56, kOpLabel = 248, kOpUnreachable = 255;
constexpr std::uint32_t kOpTypeCooperativeMatrixNV = 5358, kOpTypeCooperativeMatrixKHR = 4456;

bool cooperative_type(std::uint32_t op) {
  return op == kOpTypeCooperativeMatrixNV || op == kOpTypeCooperativeMatrixKHR;
}
}  // namespace

std::vector<std::uint32_t> reflection_view(std::span<const std::uint32_t> words) {
  std::vector<spirv::Instruction> insts;
  std::string why;
  // A malformed module is left as it is: SPIRV-Cross then names the problem.
  if (!spirv::split_instructions(words, &insts, &why)) return {words.begin(), words.end()};
  bool any = false;
  for (const spirv::Instruction& in : insts) any = any || cooperative_type(in.op);
  if (!any) return {words.begin(), words.end()};
  // Each cooperative-matrix type becomes a 4-vector of its component type (its id kept, so
  // pointers and arrays of it still parse); constants of those types are dropped (only code
  // used them); each function keeps its declaration and parameters and gets one block that
  // ends in OpUnreachable (valid for any return type).
  std::set<std::uint32_t> cooperative;
  std::vector<std::uint32_t> out(words.begin(), words.begin() + spirv::kHeaderWords);
  bool in_function = false, labelled = false;
  for (const spirv::Instruction& in : insts) {
    const std::uint32_t* w = &words[in.at];
    if (in_function) {
      if (in.op == kOpFunctionParameter) {
        out.insert(out.end(), w, w + in.count);
      } else if (in.op == kOpLabel && !labelled) {
        out.insert(out.end(), w, w + in.count);
        out.push_back(spirv::first_word(1, kOpUnreachable));
        labelled = true;
      } else if (in.op == kOpFunctionEnd) {
        out.insert(out.end(), w, w + in.count);
        in_function = false;
      }
      continue;
    }
    if (in.op == kOpFunction) {
      in_function = true;
      labelled = false;
      out.insert(out.end(), w, w + in.count);
      continue;
    }
    if (cooperative_type(in.op) && in.count >= 3) {
      cooperative.insert(w[1]);
      out.insert(out.end(), {spirv::first_word(4, kOpTypeVector), w[1], w[2], 4u});
      continue;
    }
    const bool typed_value = in.op == kOpConstantComposite || in.op == kOpConstantNull ||
                             in.op == kOpSpecConstantComposite || in.op == kOpUndef;
    if (typed_value && in.count >= 3 && cooperative.count(w[1])) continue;
    out.insert(out.end(), w, w + in.count);
  }
  return out;
}

}  // namespace vgpu::toolchain::impl
