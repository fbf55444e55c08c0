// SPDX-License-Identifier: Apache-2.0
// Numerically stable softmax of each row of x[rows×cols]. Subtracting the row's max keeps exp()
// in range for any input magnitude.
//
// Default: one workgroup of 256 invocations per row (linear group = row). Pass 1 finds the row
// max, pass 2 sums exp(x - max), pass 3 writes exp(x - max) / sum.
//
// VGPU_SOFTMAX_SPLIT=1: a row spread over several workgroups, for rows too long for one: each
// invocation's loops must stay under a driver's loop limit (DeviceLimits::max_loop_iterations;
// Mesa's gallivm stops an invocation's loops after 65 535 iterations, silently), and one group
// walks a row 256 columns per iteration of each pass. Linear group g covers columns
// [c·chunk, (c+1)·chunk) of row g / chunks (c = g % chunks, chunks = ⌈cols / chunk⌉), in two
// dispatches (p.phase):
//   0: the chunk's max m_c and sum s_c = Σ exp(x - m_c) into stats[2·(row·chunks + c) + {0, 1}];
//   1: the row's max M = max m_c and sum S = Σ s_c·exp(m_c - M) from its chunks' stats (each
//      group combines them itself: no third dispatch), then out = exp(x - M) / S over the chunk.
// core/src/ops.cpp counts these loops to size chunk; keep it in step with them.
#define WG 256u
shared float red[WG];

// Tree reductions of red[] over the workgroup; every invocation must call them.
float workgroup_max(uint lid, float v) {
  red[lid] = v;
  barrier();
  for (uint s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) red[lid] = max(red[lid], red[lid + s]);
    barrier();
  }
  const float r = red[0];
  barrier();
  return r;
}
float workgroup_sum(uint lid, float v) {
  red[lid] = v;
  barrier();
  for (uint s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) red[lid] += red[lid + s];
    barrier();
  }
  const float r = red[0];
  barrier();
  return r;
}

#if defined(VGPU_SOFTMAX_SPLIT) && VGPU_SOFTMAX_SPLIT

VGPU_PARAMS { uint rows; uint cols; uint chunk; uint phase; } p;
layout(std430, binding = 0) readonly buffer BufX { float x[]; };
layout(std430, binding = 1) writeonly buffer BufOut { float o[]; };
layout(std430, binding = 2) buffer BufStats { float stats[]; };

void main() {
  const uint chunks = (p.cols + p.chunk - 1u) / p.chunk;
  const uint g = VGPU_LINEAR_GROUP;
  const uint row = g / chunks, c = g % chunks;
  if (row >= p.rows) return;  // uniform per workgroup, so barriers below stay safe
  const uint lid = gl_LocalInvocationID.x;
  const uint base = row * p.cols;
  const uint lo = c * p.chunk, hi = min(p.cols, lo + p.chunk);
  const uint stats0 = 2u * row * chunks;

  if (p.phase == 0u) {
    float m = -3.402823466e+38;
    for (uint col = lo + lid; col < hi; col += WG) m = max(m, x[base + col]);
    m = workgroup_max(lid, m);
    float s = 0.0;
    for (uint col = lo + lid; col < hi; col += WG) s += exp(x[base + col] - m);
    s = workgroup_sum(lid, s);
    if (lid == 0u) {
      stats[stats0 + 2u * c] = m;
      stats[stats0 + 2u * c + 1u] = s;
    }
    return;
  }
  float m = -3.402823466e+38;
  for (uint j = lid; j < chunks; j += WG) m = max(m, stats[stats0 + 2u * j]);
  m = workgroup_max(lid, m);
  float s = 0.0;
  for (uint j = lid; j < chunks; j += WG) s += stats[stats0 + 2u * j + 1u] * exp(stats[stats0 + 2u * j] - m);
  const float inv = 1.0 / workgroup_sum(lid, s);
  for (uint col = lo + lid; col < hi; col += WG) o[base + col] = exp(x[base + col] - m) * inv;
}

#else

VGPU_PARAMS { uint rows; uint cols; uint pad0; uint pad1; } p;
layout(std430, binding = 0) readonly buffer BufX { float x[]; };
layout(std430, binding = 1) writeonly buffer BufOut { float o[]; };

void main() {
  const uint row = VGPU_LINEAR_GROUP;
  if (row >= p.rows) return;  // uniform per workgroup, so barriers below stay safe
  const uint lid = gl_LocalInvocationID.x;
  const uint base = row * p.cols;

  float m = -3.402823466e+38;
  for (uint c = lid; c < p.cols; c += WG) m = max(m, x[base + c]);
  m = workgroup_max(lid, m);
  float sum = 0.0;
  for (uint c = lid; c < p.cols; c += WG) sum += exp(x[base + c] - m);
  const float inv = 1.0 / workgroup_sum(lid, sum);
  for (uint c = lid; c < p.cols; c += WG) o[base + c] = exp(x[base + c] - m) * inv;
}

#endif
