// SPDX-License-Identifier: Apache-2.0
// An inclusive prefix sum of each block of 16 uints (Hillis-Steele in shared memory), plus each
// block's total, the first pass of a scan. The block is the fixed local size: the shader is
// only right when it runs exactly 16 wide.
#version 450

layout(local_size_x = 16) in;

const uint BLOCK = 16;

layout(binding = 0) readonly buffer Input { uint data_in[]; };
layout(binding = 1) writeonly buffer Output { uint data_out[]; };
layout(binding = 2) writeonly buffer BlockSums { uint block_sums[]; };

layout(push_constant) uniform Params {
  uint n;
} params;

shared uint scan[2][BLOCK];

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint i = gl_WorkGroupID.x * BLOCK + tid;
  scan[0][tid] = i < params.n ? data_in[i] : 0u;
  barrier();

  uint src = 0u;
  for (uint offset = 1u; offset < BLOCK; offset <<= 1u) {
    uint v = scan[src][tid];
    if (tid >= offset) {
      v += scan[src][tid - offset];
    }
    scan[1u - src][tid] = v;
    src = 1u - src;
    barrier();
  }

  if (i < params.n) {
    data_out[i] = scan[src][tid];
  }
  if (tid == BLOCK - 1u) {
    block_sums[gl_WorkGroupID.x] = scan[src][tid];
  }
}
