// SPDX-License-Identifier: Apache-2.0
// Half-precision storage both ways: reads float16 values, writes them doubled as float32, and
// writes float32 inputs halved as float16. Needs 16-bit storage buffer access on the device.
#version 450
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require

layout(local_size_x = 64) in;

layout(set = 0, binding = 0) readonly buffer HalfIn { float16_t half_in[]; };
layout(set = 0, binding = 1) writeonly buffer FloatOut { float float_out[]; };
layout(set = 0, binding = 2) readonly buffer FloatIn { float float_in[]; };
layout(set = 0, binding = 3) writeonly buffer HalfOut { float16_t half_out[]; };

layout(push_constant) uniform Sizes {
  uint n;
} sizes;

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i >= sizes.n) {
    return;
  }
  float_out[i] = float(half_in[i]) * 2.0;
  half_out[i] = float16_t(float_in[i] * 0.5);
}
