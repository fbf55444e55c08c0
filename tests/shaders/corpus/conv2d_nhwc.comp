// SPDX-License-Identifier: Apache-2.0
// A direct 2-D convolution over NHWC tensors with an HWIO filter, stride and zero padding from
// a push-constant block, the filter's height and width specialization constants 10 and 11
// (3x3 unless the host says otherwise), one output element per invocation.
#version 450
#extension GL_EXT_control_flow_attributes : enable

layout(local_size_x = 64) in;

layout(constant_id = 10) const int KH = 3;
layout(constant_id = 11) const int KW = 3;

layout(set = 0, binding = 0) readonly buffer Input { float x[]; };        // [N][H][W][C]
layout(set = 0, binding = 1) readonly buffer Filter { float w[]; };       // [KH][KW][C][F]
layout(set = 0, binding = 2) readonly buffer Bias { float bias[]; };      // [F]
layout(set = 0, binding = 3) writeonly buffer Output { float y[]; };      // [N][OH][OW][F]

layout(push_constant) uniform Shape {
  int batch;
  int height;
  int width;
  int in_channels;
  int out_channels;
  int out_height;
  int out_width;
  int stride;
  int pad;
} p;

void main() {
  int index = int(gl_GlobalInvocationID.x);
  int total = p.batch * p.out_height * p.out_width * p.out_channels;
  if (index >= total) {
    return;
  }
  int f = index % p.out_channels;
  int ox = (index / p.out_channels) % p.out_width;
  int oy = (index / (p.out_channels * p.out_width)) % p.out_height;
  int n = index / (p.out_channels * p.out_width * p.out_height);

  float sum = bias[f];
  [[unroll]] for (int ky = 0; ky < KH; ++ky) {
    int iy = oy * p.stride - p.pad + ky;
    if (iy < 0 || iy >= p.height) {
      continue;
    }
    [[unroll]] for (int kx = 0; kx < KW; ++kx) {
      int ix = ox * p.stride - p.pad + kx;
      if (ix < 0 || ix >= p.width) {
        continue;
      }
      int x_base = ((n * p.height + iy) * p.width + ix) * p.in_channels;
      int w_base = (ky * KW + kx) * p.in_channels * p.out_channels + f;
      for (int ci = 0; ci < p.in_channels; ++ci) {
        sum += x[x_base + ci] * w[w_base + ci * p.out_channels];
      }
    }
  }
  y[index] = sum;
}
