// SPDX-License-Identifier: Apache-2.0
// out = in * scale + offset, parameterised by a uniform buffer (std140) rather than push
// constants, as engines that share one parameter block between passes do.
#version 450

layout(local_size_x = 32) in;

layout(std140, set = 0, binding = 0) uniform Params {
  float scale;
  float offset;
  uint count;
} params;

layout(std430, set = 0, binding = 1) readonly buffer In { float values_in[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out { float values_out[]; };

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i >= params.count) {
    return;
  }
  values_out[i] = values_in[i] * params.scale + params.offset;
}
