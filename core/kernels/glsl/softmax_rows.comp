// SPDX-License-Identifier: Apache-2.0
// Numerically stable softmax of each row of x[rows×cols]: one workgroup of 256 invocations per
// row (linear group = row). Pass 1 finds the row max, pass 2 sums exp(x - max), pass 3 writes
// exp(x - max) / sum. Subtracting the max keeps exp() in range for any input magnitude.
VGPU_PARAMS { uint rows; uint cols; uint pad0; uint pad1; } p;
layout(std430, binding = 0) readonly buffer BufX { float x[]; };
layout(std430, binding = 1) writeonly buffer BufOut { float o[]; };

#define WG 256u
shared float red[WG];

void main() {
  const uint row = VGPU_LINEAR_GROUP;
  if (row >= p.rows) return;  // uniform per workgroup, so barriers below stay safe
  const uint lid = gl_LocalInvocationID.x;
  const uint base = row * p.cols;

  float m = -3.402823466e+38;
  for (uint c = lid; c < p.cols; c += WG) m = max(m, x[base + c]);
  red[lid] = m;
  barrier();
  for (uint s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) red[lid] = max(red[lid], red[lid + s]);
    barrier();
  }
  m = red[0];
  barrier();

  float sum = 0.0;
  for (uint c = lid; c < p.cols; c += WG) sum += exp(x[base + c] - m);
  red[lid] = sum;
  barrier();
  for (uint s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) red[lid] += red[lid + s];
    barrier();
  }
  const float inv = 1.0 / red[0];
  for (uint c = lid; c < p.cols; c += WG) o[base + c] = exp(x[base + c] - m) * inv;
}
