// SPDX-License-Identifier: Apache-2.0
// core/shader/src/spirv_patch.cpp — specialization defaults rewritten in a copy of a module.
#include "spirv_patch.hpp"

#include <map>

namespace vgpu::shader {
namespace {
constexpr std::uint32_t kOpDecorate = 71, kOpSpecConstantTrue = 48, kOpSpecConstantFalse = 49, kOpSpecConstant = 50;
constexpr std::uint32_t kDecorationSpecId = 1;
constexpr std::size_t kHeaderWords = 5;
}  // namespace

std::vector<std::uint32_t> with_spec_defaults(std::span<const std::uint32_t> words, std::span<const SpecEntry> spec) {
  std::vector<std::uint32_t> out(words.begin(), words.end());
  if (spec.empty() || out.size() < kHeaderWords) return out;
  std::map<std::uint32_t, std::uint32_t> value_of_spec_id;
  for (const SpecEntry& e : spec) value_of_spec_id[e.id] = e.bits;
  // Pass 1: result id → the value its SpecId asks for.
  std::map<std::uint32_t, std::uint32_t> value_of_result;
  for (std::size_t i = kHeaderWords; i < out.size();) {
    const std::uint32_t count = out[i] >> 16, op = out[i] & 0xffff;
    if (count == 0 || i + count > out.size()) break;  // malformed: leave the rest alone
    if (op == kOpDecorate && count >= 4 && out[i + 2] == kDecorationSpecId)
      if (auto it = value_of_spec_id.find(out[i + 3]); it != value_of_spec_id.end())
        value_of_result[out[i + 1]] = it->second;
    i += count;
  }
  // Pass 2: rewrite the constants (32-bit scalars take one literal word; wider ones are left).
  for (std::size_t i = kHeaderWords; i < out.size();) {
    const std::uint32_t count = out[i] >> 16, op = out[i] & 0xffff;
    if (count == 0 || i + count > out.size()) break;
    if ((op == kOpSpecConstantTrue || op == kOpSpecConstantFalse) && count == 3) {
      if (auto it = value_of_result.find(out[i + 2]); it != value_of_result.end())
        out[i] = (count << 16) | (it->second ? kOpSpecConstantTrue : kOpSpecConstantFalse);
    } else if (op == kOpSpecConstant && count == 4) {
      if (auto it = value_of_result.find(out[i + 2]); it != value_of_result.end()) out[i + 3] = it->second;
    }
    i += count;
  }
  return out;
}

}  // namespace vgpu::shader
