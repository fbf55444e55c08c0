// SPDX-License-Identifier: Apache-2.0
// core/runtime/queue/queue_kernels.cpp — the design's add-one queue kernel in every dialect (queue_kernels.hpp).
#include "vgpu/queue_kernels.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "vgpu/persistent_queue.hpp"

namespace vgpu {

std::vector<BindingDecl> queue_bindings() {
  return {BindingDecl{0, Access::read, "in", {}}, BindingDecl{1, Access::read_write, "out", {}}};
}

namespace {

// The add-one main() of both GLSL forms, which differ only in how they declare the ABI. Each
// item's words are split over its lanes, so no invocation walks more of them than a driver's
// loop limit allows (QueueConfig::lanes).
const char* const kAddOneGlslMain = R"(
void main() {
  const uint x = gl_GlobalInvocationID.x;
  if (x >= launch.item_count) return;
  const uint i = launch.item_base + x;
  const uint in_offset = in_words[4u * i], in_bytes = in_words[4u * i + 1u];
  const uint out_offset = in_words[4u * i + 2u], out_capacity = in_words[4u * i + 3u];
  const uint n = min(in_bytes, out_capacity) / 4u;
  // Lanes (docs/queue.md): this item's words are shared by the workgroups along y.
  const uint lane = gl_WorkGroupID.y, per = (n + gl_NumWorkGroups.y - 1u) / gl_NumWorkGroups.y;
  const uint end = min(n, lane * per + per);
  for (uint w = lane * per; w < end; ++w) out_words[out_offset + w] = in_words[in_offset + w] + 1u;
  if (lane != 0u) return;  // lane 0 reports the item
  out_words[2u * i] = 4u * n;
  atomicAdd(out_words[2u * i + 1u], 1u);
}
)";

}  // namespace

// The texts are never destroyed: a background calibration or a queue on another thread may read
// them while the process exits (static destructors run then).
const std::string& queue_add_one_glsl() {
  static const std::string& text =
      *new std::string(std::string(R"(// The queue ABI (docs/queue.md): item i = item_base + global id x.
VGPU_PARAMS { uint item_base; uint item_count; } launch;
layout(std430, binding = 0) readonly buffer QueueIn { uint in_words[]; };
layout(std430, binding = 1) buffer QueueOut { uint out_words[]; };
)") + kAddOneGlslMain);
  return text;
}

const std::string& queue_add_one_glsl_shader() {
  static const std::string& text = *new std::string(std::string(R"(#version 450
// The queue ABI (docs/queue.md) as a complete shader: item i = item_base + global id x.
layout(local_size_x = 64) in;
layout(push_constant) uniform QueueLaunch { uint item_base; uint item_count; } launch;
layout(set = 0, binding = 0) readonly buffer QueueIn { uint in_words[]; };
layout(set = 0, binding = 1) buffer QueueOut { uint out_words[]; };
)") + kAddOneGlslMain);
  return text;
}

const std::string& queue_add_one_cuda() {
  static const std::string& text =
      *new std::string(R"(// The queue ABI (docs/queue.md): item i = item_base + global id x.
struct QueueLaunch { unsigned item_base, item_count; };
extern "C" __global__ void queue_add_one(const unsigned* in, unsigned* out, QueueLaunch launch) {
  const unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= launch.item_count) return;
  const unsigned i = launch.item_base + x;
  const unsigned in_offset = in[4u * i], in_bytes = in[4u * i + 1u];
  const unsigned out_offset = in[4u * i + 2u], out_capacity = in[4u * i + 3u];
  const unsigned n = min(in_bytes, out_capacity) / 4u;
  // Lanes (docs/queue.md): this item's words are shared by the blocks along y.
  const unsigned lane = blockIdx.y, per = (n + gridDim.y - 1u) / gridDim.y;
  const unsigned end = min(n, lane * per + per);
  for (unsigned w = lane * per; w < end; ++w) out[out_offset + w] = in[in_offset + w] + 1u;
  if (lane != 0u) return;  // lane 0 reports the item
  out[2u * i] = 4u * n;
  atomicAdd(&out[2u * i + 1u], 1u);
}
)");
  return text;
}

void queue_add_one_cpu(const CpuWorkgroup& wg) {
  const auto& launch = wg.params_as<QueueLaunch>();
  const std::uint32_t* in = wg.buffer<const std::uint32_t>(0);
  std::uint32_t* out = wg.buffer<std::uint32_t>(1);
  for (std::uint32_t lx = 0; lx < wg.workgroup_size[0]; ++lx) {
    const std::uint64_t x = std::uint64_t{wg.workgroup_id[0]} * wg.workgroup_size[0] + lx;
    if (x >= launch.item_count) return;
    const std::uint64_t i = launch.item_base + x;
    const std::uint32_t in_offset = in[4 * i], in_bytes = in[4 * i + 1];
    const std::uint32_t out_offset = in[4 * i + 2], out_capacity = in[4 * i + 3];
    const std::uint32_t n = std::min(in_bytes, out_capacity) / 4;
    // Lanes (docs/queue.md): this item's words are shared by the workgroups along y.
    const std::uint32_t lane = wg.workgroup_id[1], lanes = std::max<std::uint32_t>(wg.num_workgroups[1], 1);
    const std::uint32_t per = static_cast<std::uint32_t>((std::uint64_t{n} + lanes - 1) / lanes);
    const std::uint32_t end = static_cast<std::uint32_t>(std::min<std::uint64_t>(n, std::uint64_t{lane} * per + per));
    for (std::uint32_t w = lane * per; w < end; ++w) out[out_offset + w] = in[in_offset + w] + 1;
    if (lane != 0) continue;  // lane 0 reports the item
    out[2 * i] = 4 * n;
    std::atomic_ref<std::uint32_t>(out[2 * i + 1]).fetch_add(1, std::memory_order_relaxed);
  }
}

KernelSource queue_add_one_kernel() {
  KernelSource s;
  s.name = "vgpu.queue_add_one";
  s.add_glsl(queue_add_one_glsl());
  s.add_cuda(queue_add_one_cuda(), "queue_add_one");
  s.add_cpu(queue_add_one_cpu, "1");
  s.bindings = queue_bindings();
  s.params_size = sizeof(QueueLaunch);
  return s;
}

KernelSource queue_add_one_shader_kernel() {
  KernelSource s;
  s.name = "vgpu.queue_add_one_shader";
  s.add_glsl_shader(queue_add_one_glsl_shader());
  return s;
}

}  // namespace vgpu
