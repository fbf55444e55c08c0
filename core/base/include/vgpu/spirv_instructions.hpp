// SPDX-License-Identifier: Apache-2.0
// vgpu/spirv_instructions.hpp — a SPIR-V module split into its instructions (where each starts,
// its word count and opcode), the one walk every word-level reader and rewriter of SPIR-V in
// vgpu uses. Header-only, so the toolchain module and the fuzz targets use it without linking.
// Thread-safety: pure functions, safe from any number of threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace vgpu::spirv {

inline constexpr std::uint32_t kMagic = 0x07230203u;
inline constexpr std::size_t kHeaderWords = 5;

/// One instruction of a module: its first word's index, its word count and its opcode.
struct Instruction {
  std::size_t at = 0;
  std::uint32_t count = 0;
  std::uint32_t op = 0;
};

/// Splits words into instructions. Returns false, with *why naming the problem, when there is
/// no SPIR-V header or an instruction has no words or runs past the end.
inline bool split_instructions(std::span<const std::uint32_t> words, std::vector<Instruction>* out, std::string* why) {
  out->clear();
  if (words.size() < kHeaderWords || words[0] != kMagic) {
    *why = "no SPIR-V header";
    return false;
  }
  for (std::size_t i = kHeaderWords; i < words.size();) {
    const std::uint32_t count = words[i] >> 16, op = words[i] & 0xffffu;
    if (count == 0 || count > words.size() - i) {
      *why = "an instruction runs past the end at word " + std::to_string(i);
      return false;
    }
    out->push_back(Instruction{i, count, op});
    i += count;
  }
  return true;
}

/// Returns the first word of an instruction with opcode op and word count.
inline constexpr std::uint32_t first_word(std::uint32_t count, std::uint32_t op) { return (count << 16) | op; }

}  // namespace vgpu::spirv
