// SPDX-License-Identifier: Apache-2.0
// Split-K's second step: C[i] = Σ_z P[z·count + i] over the slices matmul.comp wrote (one
// invocation per element of C, 256 per workgroup, groups spread over x then y). Its loop walks
// the slices: core/runtime/kernel_cache/ops.cpp keeps their count under a driver's loop limit.
VGPU_PARAMS { uint count; uint slices; uint pad0; uint pad1; } p;
layout(std430, binding = 0) readonly buffer BufP { float P[]; };
layout(std430, binding = 1) writeonly buffer BufC { float C[]; };

void main() {
  const uint i = VGPU_LINEAR_GROUP * 256u + gl_LocalInvocationID.x;
  if (i >= p.count) return;
  float s = 0.0;
  for (uint z = 0u; z < p.slices; ++z) s += P[z * p.count + i];
  C[i] = s;
}
