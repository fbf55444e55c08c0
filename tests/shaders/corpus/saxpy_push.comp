// SPDX-License-Identifier: Apache-2.0
// y = a * x + y in place, the scalar and the length in the shader's own push-constant block,
// a fixed local size of 16 that the host does not repeat.
#version 450

layout(local_size_x = 16) in;

layout(push_constant) uniform Constants {
  float a;
  uint n;
} constants;

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) buffer Y { float y[]; };

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < constants.n) {
    y[i] = constants.a * x[i] + y[i];
  }
}
