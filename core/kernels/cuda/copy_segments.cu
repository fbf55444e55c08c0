// SPDX-License-Identifier: Apache-2.0
// core/kernels/cuda/copy_segments.cu — internal to the CUDA backend (not an op): copies up to 8
// byte ranges between device buffers and host-mapped pinned staging in one launch. A small
// round trip uses it instead of copy-engine memcpys: kernel-to-kernel hand-offs inside a graph
// cost far less than memcpy nodes, and both uploads go in one launch.
// Params only (no binding slots); blocks × 256 threads stride over every segment, 16 bytes at a
// time where source, destination and length allow it, else byte by byte.
struct CopySegment {
  unsigned long long src, dst, bytes;
};
struct CopySegmentsParams {
  unsigned count, pad0, pad1, pad2;
  CopySegment seg[8];
};

extern "C" __global__ void __launch_bounds__(256) vgpu_copy_segments(CopySegmentsParams p) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  const unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (unsigned s = 0; s < p.count && s < 8u; ++s) {
    const CopySegment g = p.seg[s];
    if (((g.src | g.dst | g.bytes) & 15ull) == 0ull) {
      const uint4* src = reinterpret_cast<const uint4*>(g.src);
      uint4* dst = reinterpret_cast<uint4*>(g.dst);
      for (unsigned long long i = first; i < g.bytes / 16ull; i += stride) dst[i] = src[i];
    } else {
      const unsigned char* src = reinterpret_cast<const unsigned char*>(g.src);
      unsigned char* dst = reinterpret_cast<unsigned char*>(g.dst);
      for (unsigned long long i = first; i < g.bytes; i += stride) dst[i] = src[i];
    }
  }
}
