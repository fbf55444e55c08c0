// SPDX-License-Identifier: Apache-2.0
// core/shader/toolchain/spec_defaults.cpp — specialization defaults rewritten in a copy of a
// module, for SPIRV-Cross (which reflects and writes a module at its defaults).
#include <map>

#include "toolchain_impl.hpp"
#include "vgpu/spirv_instructions.hpp"

namespace vgpu::toolchain::impl {
namespace {
constexpr std::uint32_t kOpDecorate = 71, kOpSpecConstantTrue = 48, kOpSpecConstantFalse = 49, kOpSpecConstant = 50;
constexpr std::uint32_t kDecorationSpecId = 1;
}  // namespace

std::vector<std::uint32_t> with_spec_defaults(std::span<const std::uint32_t> words, std::span<const SpecEntry> spec) {
  std::vector<std::uint32_t> out(words.begin(), words.end());
  std::vector<spirv::Instruction> insts;
  std::string why;
  // A malformed module is left as it is: SPIRV-Cross then names the problem.
  if (spec.empty() || !spirv::split_instructions(words, &insts, &why)) return out;
  std::map<std::uint32_t, std::uint32_t> value_of_spec_id;
  for (const SpecEntry& e : spec) value_of_spec_id[e.id] = e.bits;
  std::map<std::uint32_t, std::uint32_t> value_of_result;  // result id → the value its SpecId asks for
  for (const spirv::Instruction& in : insts)
    if (in.op == kOpDecorate && in.count >= 4 && out[in.at + 2] == kDecorationSpecId)
      if (auto it = value_of_spec_id.find(out[in.at + 3]); it != value_of_spec_id.end())
        value_of_result[out[in.at + 1]] = it->second;
  // 32-bit scalars take one literal word; wider ones are left (vgpu's values are all 32-bit).
  for (const spirv::Instruction& in : insts) {
    std::uint32_t* w = &out[in.at];
    if ((in.op == kOpSpecConstantTrue || in.op == kOpSpecConstantFalse) && in.count == 3) {
      if (auto it = value_of_result.find(w[2]); it != value_of_result.end())
        w[0] = spirv::first_word(in.count, it->second ? kOpSpecConstantTrue : kOpSpecConstantFalse);
    } else if (in.op == kOpSpecConstant && in.count == 4) {
      if (auto it = value_of_result.find(w[2]); it != value_of_result.end()) w[3] = it->second;
    }
  }
  return out;
}

}  // namespace vgpu::toolchain::impl
