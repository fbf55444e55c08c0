// SPDX-License-Identifier: Apache-2.0
// tests/support/valid_payloads.hpp — payloads that pass DiskStore's per-kind payload checks
// (vgpu/cache/payload_check.hpp), for tests about the store itself (directories, eviction,
// damage) that must not be rejected as "invalid" for what their bytes are.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "vgpu/cache/disk_store.hpp"

namespace vgpu_test {

/// n seeded random bytes.
inline std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> b(n);
  for (auto& x : b) x = static_cast<std::uint8_t>(rng());
  return b;
}

/// A valid SPIR-V 1.3 compute module (an empty `main`, local size 1) of at least n bytes: an
/// OpName of seeded letters pads it, so sizes and contents differ by n and seed.
inline std::vector<std::uint8_t> valid_spirv(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  const std::size_t fixed_words = 5 + 2 + 3 + 5 + 6 + 3 + 2 + 3 + 5 + 2 + 1 + 1;
  const std::size_t want_words = std::max<std::size_t>((n + 3) / 4, fixed_words + 3);
  const std::size_t name_words = want_words - fixed_words - 2;  // OpName's own 2 words
  std::vector<std::uint32_t> w = {0x07230203u, 0x00010300u, 0u, 5u, 0u};
  auto op = [&](std::uint32_t code, std::initializer_list<std::uint32_t> args) {
    w.push_back(static_cast<std::uint32_t>((args.size() + 1) << 16) | code);
    w.insert(w.end(), args);
  };
  op(17, {1});                                                           // OpCapability Shader
  op(14, {0, 1});                                                        // OpMemoryModel Logical GLSL450
  op(15, {5, 1, 0x6e69616du, 0});                                        // OpEntryPoint GLCompute %1 "main"
  op(16, {1, 17, 1, 1, 1});                                              // OpExecutionMode %1 LocalSize 1 1 1
  w.push_back(static_cast<std::uint32_t>((name_words + 2) << 16) | 5u);  // OpName %1 "<letters>"
  w.push_back(1);
  for (std::size_t i = 0; i < name_words; ++i) {
    std::uint32_t word = 0;
    const int letters = i + 1 == name_words ? 3 : 4;  // the last word keeps a NUL
    for (int b = 0; b < letters; ++b) word |= static_cast<std::uint32_t>('a' + rng() % 26) << (8 * b);
    w.push_back(word);
  }
  op(19, {2});           // %2 = OpTypeVoid
  op(33, {3, 2});        // %3 = OpTypeFunction %2
  op(54, {2, 1, 0, 3});  // %1 = OpFunction %2 None %3
  op(248, {4});          // %4 = OpLabel
  op(253, {});           // OpReturn
  op(56, {});            // OpFunctionEnd
  std::vector<std::uint8_t> bytes(w.size() * 4);
  std::memcpy(bytes.data(), w.data(), bytes.size());
  return bytes;
}

/// A payload of about n bytes that passes the payload check of kind: SPIR-V for spirv, a
/// version-one header for vkpc, NUL-terminated PTX-like text for cubin, random bytes otherwise.
inline std::vector<std::uint8_t> payload_for(vgpu::cache::EntryKind kind, std::size_t n, std::uint32_t seed) {
  using vgpu::cache::EntryKind;
  switch (kind) {
    case EntryKind::spirv:
      return valid_spirv(n, seed);
    case EntryKind::vk_pipeline_cache: {
      auto b = random_bytes(std::max<std::size_t>(n, 32), seed);
      const std::uint8_t header[8] = {32, 0, 0, 0, 1, 0, 0, 0};
      std::copy(header, header + 8, b.begin());
      return b;
    }
    case EntryKind::cuda_binary: {
      auto b = random_bytes(std::max<std::size_t>(n, 2), seed);
      for (auto& c : b) c = static_cast<std::uint8_t>('a' + c % 26);
      b.back() = 0;
      return b;
    }
    default:
      return random_bytes(n, seed);
  }
}

}  // namespace vgpu_test
