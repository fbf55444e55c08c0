// SPDX-License-Identifier: Apache-2.0
// A histogram of uint keys (bin = key % BINS) under the Vulkan memory model: each workgroup
// counts into a shared-memory histogram sized by a specialization constant (id 7), then adds
// it to the global one with atomics. The global bins must start at zero.
#version 450
#pragma use_vulkan_memory_model
#extension GL_KHR_memory_scope_semantics : require

layout(local_size_x = 64) in;

layout(constant_id = 7) const uint BINS = 16;

layout(set = 0, binding = 0) readonly buffer Keys { uint keys[]; };
layout(set = 0, binding = 1) buffer Bins { uint bins[]; };

layout(push_constant) uniform Count {
  uint n;
} count;

shared uint local_bins[BINS];

void main() {
  uint tid = gl_LocalInvocationID.x;
  for (uint b = tid; b < BINS; b += gl_WorkGroupSize.x) {
    local_bins[b] = 0u;
  }
  barrier();

  uint i = gl_GlobalInvocationID.x;
  if (i < count.n) {
    atomicAdd(local_bins[keys[i] % BINS], 1u);
  }
  barrier();

  for (uint b = tid; b < BINS; b += gl_WorkGroupSize.x) {
    uint c = local_bins[b];
    if (c != 0u) {
      atomicAdd(bins[b], c, gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsRelaxed);
    }
  }
}
