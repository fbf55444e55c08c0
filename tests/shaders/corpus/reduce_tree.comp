// SPDX-License-Identifier: Apache-2.0
// One pass of a strided tree reduction (sum): each workgroup folds 2 * WG inputs into one
// partial sum in shared memory. The workgroup size is a specialization constant (id 1), so
// the same module serves every pass of a multi-pass reduction with its own size.
#version 450

layout(local_size_x_id = 1) in;
layout(constant_id = 1) const uint WG = 128;

layout(set = 0, binding = 0) readonly buffer Input {
  float data_in[];
};

layout(set = 0, binding = 1) writeonly buffer Output {
  float data_out[];
};

layout(push_constant) uniform PushConstants {
  uint n;
} pc;

shared float partial[WG];

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint i = gl_WorkGroupID.x * (WG * 2u) + tid;

  float v = 0.0;
  if (i < pc.n) {
    v = data_in[i];
  }
  if (i + WG < pc.n) {
    v += data_in[i + WG];
  }
  partial[tid] = v;
  barrier();

  for (uint stride = WG / 2u; stride > 0u; stride >>= 1u) {
    if (tid < stride) {
      partial[tid] += partial[tid + stride];
    }
    barrier();
  }

  if (tid == 0u) {
    data_out[gl_WorkGroupID.x] = partial[0];
  }
}
