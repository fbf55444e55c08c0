// SPDX-License-Identifier: Apache-2.0
// C[m×n] = A[m×k]·B[k×n], row-major float32. One workgroup of 16×16 invocations computes a
// 64×64 tile of C; each invocation keeps a 4×4 block of accumulators in registers. K is walked
// in steps of 16 through shared memory. Rows/columns past m, n, k load zeros and store nothing,
// so any shape works. Invocation (tx, ty) owns rows ty+16i and columns tx+16j: strided
// ownership keeps shared-memory reads conflict-free and global stores coalesced.
VGPU_PARAMS { uint m; uint n; uint k; uint pad; } p;
layout(std430, binding = 0) readonly buffer BufA { float A[]; };
layout(std430, binding = 1) readonly buffer BufB { float B[]; };
layout(std430, binding = 2) writeonly buffer BufC { float C[]; };

#define TM 64
#define TN 64
#define TK 16

shared float As[TK][TM + 1];  // A tile transposed (k-major); +1 avoids bank conflicts on store
shared float Bs[TK][TN];

void main() {
  const uint tx = gl_LocalInvocationID.x;
  const uint ty = gl_LocalInvocationID.y;
  const uint tid = ty * 16u + tx;
  const uint row0 = gl_WorkGroupID.y * TM;
  const uint col0 = gl_WorkGroupID.x * TN;

  float acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;

  for (uint k0 = 0u; k0 < p.k; k0 += TK) {
    for (uint l = 0u; l < 4u; ++l) {
      const uint idx = tid + l * 256u;
      const uint ar = idx / TK, ac = idx % TK;  // A tile is TM rows × TK columns
      const uint gr = row0 + ar, gc = k0 + ac;
      As[ac][ar] = (gr < p.m && gc < p.k) ? A[gr * p.k + gc] : 0.0;
      const uint br = idx / TN, bc = idx % TN;  // B tile is TK rows × TN columns
      const uint grb = k0 + br, gcb = col0 + bc;
      Bs[br][bc] = (grb < p.k && gcb < p.n) ? B[grb * p.n + gcb] : 0.0;
    }
    barrier();
    for (uint kk = 0u; kk < TK; ++kk) {
      float a[4], b[4];
      for (int i = 0; i < 4; ++i) a[i] = As[kk][ty + 16u * uint(i)];
      for (int j = 0; j < 4; ++j) b[j] = Bs[kk][tx + 16u * uint(j)];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
    }
    barrier();
  }
  for (int i = 0; i < 4; ++i) {
    const uint r = row0 + ty + 16u * uint(i);
    if (r >= p.m) continue;
    for (int j = 0; j < 4; ++j) {
      const uint c = col0 + tx + 16u * uint(j);
      if (c < p.n) C[r * p.n + c] = acc[i][j];
    }
  }
}
