// SPDX-License-Identifier: Apache-2.0
// tests/support/queue_test_kernel.hpp — the queue suite's "probe" queue kernel in GLSL (Vulkan,
// OpenGL), CUDA and as a CPU callable, and its host reference. For each item it writes the
// payload's length (one u32) and then every payload byte plus 1 (mod 256), so the output
// depends on the length; out_bytes = 4 + in_bytes (run it with output_bytes = kProbeCapacity).
// A 4-byte payload holding a magic word breaks the ABI on purpose:
//   kNoEmit: no output; kEmitTwice: two emits; kTooMany: out_bytes = capacity + 1;
//   kPoison: garbage in the whole output area, out_bytes 0xFFFFFFFF, 5 emits;
//   kUnguarded (as a launch's first item): invocations past item_count emit too.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "vgpu/vgpu.hpp"

namespace vgpu_test {

inline constexpr std::uint32_t kNoEmit = 0xBAD00001u, kEmitTwice = 0xBAD00002u, kTooMany = 0xBAD00003u,
                               kPoison = 0xBAD00004u, kUnguarded = 0xBAD00005u;
/// The output bytes per item the probe needs for payloads of up to 256 bytes.
inline constexpr std::uint32_t kProbeCapacity = 260;

inline const std::string kProbeGlsl = R"(
VGPU_PARAMS { uint item_base; uint item_count; } launch;
layout(std430, binding = 0) readonly buffer QueueIn { uint in_words[]; };
layout(std430, binding = 1) buffer QueueOut { uint out_words[]; };
uint magic_of(uint i) { return in_words[4u * i + 1u] == 4u ? in_words[in_words[4u * i]] : 0u; }
void main() {
  const uint x = gl_GlobalInvocationID.x;
  const uint i = launch.item_base + x;
  if (x >= launch.item_count) {
    if (magic_of(launch.item_base) == 0xBAD00005u) atomicAdd(out_words[2u * i + 1u], 1u);
    return;
  }
  const uint in_offset = in_words[4u * i], in_bytes = in_words[4u * i + 1u];
  const uint out_offset = in_words[4u * i + 2u], cap = in_words[4u * i + 3u];
  const uint m = magic_of(i);
  if (m == 0xBAD00001u) return;
  if (m == 0xBAD00004u) {
    for (uint w = 0u; w < cap / 4u; ++w) out_words[out_offset + w] = 0xFFFFFFFFu;
    out_words[2u * i] = 0xFFFFFFFFu;
    atomicAdd(out_words[2u * i + 1u], 5u);
    return;
  }
  out_words[out_offset] = in_bytes;
  for (uint w = 0u; w < (in_bytes + 3u) / 4u; ++w) {
    const uint v = in_words[in_offset + w];
    out_words[out_offset + 1u + w] = ((v & 0x7F7F7F7Fu) + 0x01010101u) ^ (v & 0x80808080u);
  }
  out_words[2u * i] = m == 0xBAD00003u ? cap + 1u : 4u + in_bytes;
  atomicAdd(out_words[2u * i + 1u], m == 0xBAD00002u ? 2u : 1u);
}
)";

inline const std::string kProbeCuda = R"(
struct QueueLaunch { unsigned item_base, item_count; };
__device__ unsigned magic_of(const unsigned* in, unsigned i) { return in[4u * i + 1u] == 4u ? in[in[4u * i]] : 0u; }
extern "C" __global__ void queue_probe(const unsigned* in, unsigned* out, QueueLaunch launch) {
  const unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned i = launch.item_base + x;
  if (x >= launch.item_count) {
    if (magic_of(in, launch.item_base) == 0xBAD00005u) atomicAdd(&out[2u * i + 1u], 1u);
    return;
  }
  const unsigned in_offset = in[4u * i], in_bytes = in[4u * i + 1u];
  const unsigned out_offset = in[4u * i + 2u], cap = in[4u * i + 3u];
  const unsigned m = magic_of(in, i);
  if (m == 0xBAD00001u) return;
  if (m == 0xBAD00004u) {
    for (unsigned w = 0u; w < cap / 4u; ++w) out[out_offset + w] = 0xFFFFFFFFu;
    out[2u * i] = 0xFFFFFFFFu;
    atomicAdd(&out[2u * i + 1u], 5u);
    return;
  }
  out[out_offset] = in_bytes;
  for (unsigned w = 0u; w < (in_bytes + 3u) / 4u; ++w) {
    const unsigned v = in[in_offset + w];
    out[out_offset + 1u + w] = ((v & 0x7F7F7F7Fu) + 0x01010101u) ^ (v & 0x80808080u);
  }
  out[2u * i] = m == 0xBAD00003u ? cap + 1u : 4u + in_bytes;
  atomicAdd(&out[2u * i + 1u], m == 0xBAD00002u ? 2u : 1u);
}
)";

inline void queue_probe_cpu(const vgpu::CpuWorkgroup& wg) {
  const auto& launch = wg.params_as<vgpu::QueueLaunch>();
  const std::uint32_t* in = wg.buffer<const std::uint32_t>(0);
  std::uint32_t* out = wg.buffer<std::uint32_t>(1);
  auto magic_of = [&](std::uint64_t i) { return in[4 * i + 1] == 4 ? in[in[4 * i]] : 0u; };
  auto emit = [&](std::uint64_t i, std::uint32_t k) {
    std::atomic_ref<std::uint32_t>(out[2 * i + 1]).fetch_add(k, std::memory_order_relaxed);
  };
  for (std::uint32_t lx = 0; lx < wg.workgroup_size[0]; ++lx) {
    const std::uint64_t x = std::uint64_t{wg.workgroup_id[0]} * wg.workgroup_size[0] + lx;
    const std::uint64_t i = launch.item_base + x;
    if (x >= launch.item_count) {
      if (magic_of(launch.item_base) == kUnguarded) emit(i, 1);
      continue;
    }
    const std::uint32_t in_offset = in[4 * i], in_bytes = in[4 * i + 1], out_offset = in[4 * i + 2],
                        cap = in[4 * i + 3];
    const std::uint32_t m = magic_of(i);
    if (m == kNoEmit) continue;
    if (m == kPoison) {
      for (std::uint32_t w = 0; w < cap / 4; ++w) out[out_offset + w] = 0xFFFFFFFFu;
      out[2 * i] = 0xFFFFFFFFu;
      emit(i, 5);
      continue;
    }
    out[out_offset] = in_bytes;
    for (std::uint32_t w = 0; w < (in_bytes + 3) / 4; ++w) {
      const std::uint32_t v = in[in_offset + w];
      out[out_offset + 1 + w] = ((v & 0x7F7F7F7Fu) + 0x01010101u) ^ (v & 0x80808080u);
    }
    out[2 * i] = m == kTooMany ? cap + 1 : 4 + in_bytes;
    emit(i, m == kEmitTwice ? 2 : 1);
  }
}

/// Returns the probe kernel in every dialect with the ABI's declarations.
inline vgpu::KernelSource queue_probe_kernel() {
  vgpu::KernelSource s;
  s.name = "test.queue_probe";
  s.add_glsl(kProbeGlsl);
  s.add_cuda(kProbeCuda, "queue_probe");
  s.add_cpu(queue_probe_cpu, "1");
  s.bindings = vgpu::queue_bindings();
  s.params_size = sizeof(vgpu::QueueLaunch);
  return s;
}

/// Returns the probe's expected output for payload p: its length, then each byte plus 1.
inline std::vector<std::byte> probe_reference(std::span<const std::byte> p) {
  std::vector<std::byte> out(4 + p.size());
  const std::uint32_t n = static_cast<std::uint32_t>(p.size());
  std::memcpy(out.data(), &n, 4);
  for (std::size_t b = 0; b < p.size(); ++b) out[4 + b] = static_cast<std::byte>(static_cast<std::uint8_t>(p[b]) + 1);
  return out;
}

/// Returns the 4-byte payload of a magic word.
inline std::span<const std::byte> magic_payload(const std::uint32_t& word) {
  return std::as_bytes(std::span<const std::uint32_t>(&word, 1));
}

}  // namespace vgpu_test
