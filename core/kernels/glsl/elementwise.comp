// SPDX-License-Identifier: Apache-2.0
// out = a OP b over n elements (OP from the VGPU_OP define: 0 add, 1 mul); one invocation per
// element, groups spread over x and y.
VGPU_PARAMS { uint n; uint pad0; uint pad1; uint pad2; } p;
layout(std430, binding = 0) readonly buffer BufA { float a[]; };
layout(std430, binding = 1) readonly buffer BufB { float b[]; };
layout(std430, binding = 2) writeonly buffer BufOut { float o[]; };

void main() {
  const uint i = VGPU_LINEAR_GROUP * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= p.n) return;
#if VGPU_OP == 0
  o[i] = a[i] + b[i];
#else
  o[i] = a[i] * b[i];
#endif
}
