// SPDX-License-Identifier: Apache-2.0
// y = a*x + y over n elements; one invocation per element, groups spread over x and y.
VGPU_PARAMS { uint n; uint pad0; uint pad1; uint pad2; } p;
layout(std430, binding = 0) readonly buffer BufA { float a[]; };
layout(std430, binding = 1) readonly buffer BufX { float x[]; };
layout(std430, binding = 2) buffer BufY { float y[]; };

void main() {
  const uint i = VGPU_LINEAR_GROUP * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i < p.n) y[i] = fma(a[0], x[i], y[i]);
}
