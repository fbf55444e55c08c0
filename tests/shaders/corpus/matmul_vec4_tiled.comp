// SPDX-License-Identifier: Apache-2.0
// C = A * B, row-major, in the style of benchmark-suite matmuls: the sizes M, N, K are
// specialization constants 0, 1, 2 (the host may keep the defaults), B and C are read and
// written as vec4 (N is a multiple of 4), and A's rows and B's vec4 columns go through
// shared-memory tiles of TILE_K (constant 3) along K, with the inner loop unrolled.
#version 450
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x = 8, local_size_y = 8, local_size_z = 1) in;

layout(constant_id = 0) const uint M = 7;
layout(constant_id = 1) const uint N = 8;
layout(constant_id = 2) const uint K = 9;
layout(constant_id = 3) const uint TILE_K = 16;

layout(set = 0, binding = 0) readonly buffer MatrixA {
  float a[];
};
layout(set = 0, binding = 1) readonly buffer MatrixB {
  vec4 b[];
};
layout(set = 0, binding = 2) writeonly buffer MatrixC {
  vec4 c[];
};

const uint ROWS = 8;   // rows of C per workgroup (local_size_y)
const uint COLS4 = 8;  // vec4 columns of C per workgroup (local_size_x)

shared float tile_a[ROWS][TILE_K];
shared vec4 tile_b[TILE_K][COLS4];

void main() {
  const uint N4 = N / 4u;
  uint lx = gl_LocalInvocationID.x;
  uint ly = gl_LocalInvocationID.y;
  uint col4 = gl_WorkGroupID.x * COLS4 + lx;
  uint row = gl_WorkGroupID.y * ROWS + ly;
  uint flat_id = ly * COLS4 + lx;

  vec4 acc = vec4(0.0);
  for (uint k0 = 0u; k0 < K; k0 += TILE_K) {
    // 64 invocations load ROWS x TILE_K floats of A and TILE_K x COLS4 vec4s of B.
    for (uint e = flat_id; e < ROWS * TILE_K; e += ROWS * COLS4) {
      uint r = e / TILE_K;
      uint kk = e % TILE_K;
      uint grow = gl_WorkGroupID.y * ROWS + r;
      tile_a[r][kk] = (grow < M && k0 + kk < K) ? a[grow * K + k0 + kk] : 0.0;
    }
    for (uint e = flat_id; e < TILE_K * COLS4; e += ROWS * COLS4) {
      uint kk = e / COLS4;
      uint cc = e % COLS4;
      uint gcol4 = gl_WorkGroupID.x * COLS4 + cc;
      tile_b[kk][cc] = (gcol4 < N4 && k0 + kk < K) ? b[(k0 + kk) * N4 + gcol4] : vec4(0.0);
    }
    barrier();

    [[unroll]] for (uint kk = 0u; kk < TILE_K; ++kk) {
      acc += tile_a[ly][kk] * tile_b[kk][lx];
    }
    barrier();
  }

  if (row < M && col4 < N4) {
    c[row * N4 + col4] = acc;
  }
}
