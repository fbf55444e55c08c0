// SPDX-License-Identifier: Apache-2.0
// Fibonacci numbers in place, in the style of the classic headless Vulkan compute sample: one
// invocation per element, the element count a specialization constant at id 0 that the host
// may leave at its default (only the first BUFFER_ELEMENTS values are then replaced).
#version 450

layout(local_size_x = 1, local_size_y = 1, local_size_z = 1) in;

layout(binding = 0) buffer Values {
  uint values[];
};

layout(constant_id = 0) const uint BUFFER_ELEMENTS = 32;

uint fibonacci(uint n) {
  if (n <= 1) {
    return n;
  }
  uint previous = 0;
  uint current = 1;
  for (uint i = 1; i < n; ++i) {
    uint next = previous + current;
    previous = current;
    current = next;
  }
  return current;
}

void main() {
  uint index = gl_GlobalInvocationID.x;
  if (index >= BUFFER_ELEMENTS) {
    return;
  }
  values[index] = fibonacci(values[index]);
}
