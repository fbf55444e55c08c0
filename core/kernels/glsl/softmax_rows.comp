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
// core/runtime/kernel_cache/ops.cpp counts these loops to size chunk; keep it in step with them.
#define WG 256u
shared float red[WG];

// Tree reduction over the workgroup: RESULT = OP of every invocation's V, in each invocation,
// through SLOT, a shared variable no later code of the dispatch writes. Not read from red[0]:
// NVIDIA's OpenGL compiler (the H200's driver) re-loads such a value from shared memory inside
// the loop that uses it, after later barriers, when other invocations have already started the
// next reduction in red[] — one term of a row's sum then came out as exp(x) instead of
// exp(x - max) (sums ~1e10 too large). A macro in main() with no early return before it:
// OpenGL's GLSL allowed barrier() only in main() and not after a return. memoryBarrierShared()
// because OpenGL's barrier() orders execution only, not shared-memory writes.
#define WORKGROUP_REDUCE(RESULT, SLOT, V, OP)                            \
  red[lid] = (V);                                                        \
  memoryBarrierShared();                                                 \
  barrier();                                                             \
  for (uint s_ = WG / 2u; s_ > 0u; s_ >>= 1u) {                          \
    if (lid < s_) red[lid] = OP(red[lid], red[lid + s_]);                \
    memoryBarrierShared();                                               \
    barrier();                                                           \
  }                                                                      \
  if (lid == 0u) SLOT = red[0];                                          \
  memoryBarrierShared();                                                 \
  barrier();                                                             \
  RESULT = SLOT

// One slot per reduction of a dispatch (either kernel runs two): each is written once.
shared float max_slot, sum_slot;

float add(float a, float b) { return a + b; }

#if defined(VGPU_SOFTMAX_SPLIT) && VGPU_SOFTMAX_SPLIT

VGPU_PARAMS { uint rows; uint cols; uint chunk; uint phase; } p;
layout(std430, binding = 0) readonly buffer BufX { float x[]; };
layout(std430, binding = 1) writeonly buffer BufOut { float o[]; };
layout(std430, binding = 2) buffer BufStats { float stats[]; };

void main() {
  const uint chunks = (p.cols + p.chunk - 1u) / p.chunk;
  const uint g = VGPU_LINEAR_GROUP;
  const uint row = g / chunks, c = g % chunks;
  // A group past the last row (the grid is rounded up) walks no columns and writes nothing,
  // but reaches every barrier: see WORKGROUP_REDUCE.
  const bool live = row < p.rows;
  const uint lid = gl_LocalInvocationID.x;
  const uint base = row * p.cols;
  const uint lo = c * p.chunk, hi = live ? min(p.cols, lo + p.chunk) : lo;
  const uint stats0 = 2u * row * chunks;

  if (p.phase == 0u) {
    float m = -3.402823466e+38;
    for (uint col = lo + lid; col < hi; col += WG) m = max(m, x[base + col]);
    WORKGROUP_REDUCE(m, max_slot, m, max);
    float s = 0.0;
    for (uint col = lo + lid; col < hi; col += WG) s += exp(x[base + col] - m);
    WORKGROUP_REDUCE(s, sum_slot, s, add);
    if (live && lid == 0u) {
      stats[stats0 + 2u * c] = m;
      stats[stats0 + 2u * c + 1u] = s;
    }
  } else {
    const uint used = live ? chunks : 0u;
    float m = -3.402823466e+38;
    for (uint j = lid; j < used; j += WG) m = max(m, stats[stats0 + 2u * j]);
    WORKGROUP_REDUCE(m, max_slot, m, max);
    float s = 0.0;
    for (uint j = lid; j < used; j += WG) s += stats[stats0 + 2u * j + 1u] * exp(stats[stats0 + 2u * j] - m);
    WORKGROUP_REDUCE(s, sum_slot, s, add);
    const float inv = 1.0 / s;
    for (uint col = lo + lid; col < hi; col += WG) o[base + col] = exp(x[base + col] - m) * inv;
  }
}

#else

VGPU_PARAMS { uint rows; uint cols; uint pad0; uint pad1; } p;
layout(std430, binding = 0) readonly buffer BufX { float x[]; };
layout(std430, binding = 1) writeonly buffer BufOut { float o[]; };

void main() {
  const uint row = VGPU_LINEAR_GROUP;
  const uint lid = gl_LocalInvocationID.x;
  const uint base = row * p.cols;
  // A group past the last row walks no columns but reaches every barrier (WORKGROUP_REDUCE).
  const uint cols = row < p.rows ? p.cols : 0u;

  float m = -3.402823466e+38;
  for (uint c = lid; c < cols; c += WG) m = max(m, x[base + c]);
  WORKGROUP_REDUCE(m, max_slot, m, max);
  float sum = 0.0;
  for (uint c = lid; c < cols; c += WG) sum += exp(x[base + c] - m);
  WORKGROUP_REDUCE(sum, sum_slot, sum, add);
  const float inv = 1.0 / sum;
  for (uint c = lid; c < cols; c += WG) o[base + c] = exp(x[base + c] - m) * inv;
}

#endif
