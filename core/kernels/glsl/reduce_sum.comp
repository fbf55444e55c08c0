// SPDX-License-Identifier: Apache-2.0
// One pass of a pairwise sum: linear group g sums BLOCK = 256*ITEMS consecutive inputs into
// out[g]. Each invocation adds ITEMS values strided by 256 (coalesced), then the workgroup
// combines its 256 partials in a shared-memory tree. Error: ≤ (ITEMS + log2(n)) * eps * Σ|x|.
// Its loops run ITEMS + 8 iterations per invocation whatever n is (longer inputs take more
// groups and passes), so a driver's loop limit (DeviceLimits::max_loop_iterations) never binds.
VGPU_PARAMS { uint n; uint pad0; uint pad1; uint pad2; } p;
layout(std430, binding = 0) readonly buffer BufIn { float x[]; };
layout(std430, binding = 1) writeonly buffer BufOut { float o[]; };

#define WG 256u
#define ITEMS 8u
shared float partial[WG];

void main() {
  const uint lid = gl_LocalInvocationID.x;
  const uint base = VGPU_LINEAR_GROUP * WG * ITEMS;
  float s = 0.0;
  for (uint t = 0u; t < ITEMS; ++t) {
    const uint i = base + t * WG + lid;
    if (i < p.n) s += x[i];
  }
  partial[lid] = s;
  memoryBarrierShared();  // OpenGL's barrier() does not order shared memory by itself
  barrier();
  for (uint stride = WG / 2u; stride > 0u; stride >>= 1u) {
    if (lid < stride) partial[lid] += partial[lid + stride];
    memoryBarrierShared();  // OpenGL's barrier() does not order shared memory by itself
    barrier();
  }
  if (lid == 0u && base < p.n) o[VGPU_LINEAR_GROUP] = partial[0];
}
