// SPDX-License-Identifier: Apache-2.0
// A vec4 buffer copy as benchmark suites write it to measure bandwidth: explicit set = 0
// descriptors, a fixed local size, the element count taken from the buffer itself.
#version 450

layout(local_size_x = 64) in;

layout(set = 0, binding = 0) readonly buffer Source {
  vec4 src[];
};

layout(set = 0, binding = 1) writeonly buffer Destination {
  vec4 dst[];
};

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < uint(src.length())) {
    dst[i] = src[i];
  }
}
