// SPDX-License-Identifier: Apache-2.0
// tests/backends/cuda_matmul_emulated.cpp — needs no GPU: runs core/kernels/cuda/matmul.cu, built with one
// tiling's VGPU_MM_* defines (tests/CMakeLists.txt: one program per matmul entry of
// VGPU_CUDA_PRECOMPILED), on the CPU, and checks every element of C against a double-precision
// sum at awkward and aligned shapes. So a wrong index in the kernel (warp tiling, edge path,
// double buffer) fails here, on machines where the conformance suite's CUDA cases cannot run.
// Emulation (cuda_emulation.hpp): one std::thread per CUDA thread; __syncthreads is a
// std::barrier of the block; the kernel's __shared__ arrays become function statics, which the
// block's threads share (blocks run one after another). The kernel may use only what the shims
// define: a kernel that gains CUDA intrinsics must add them there too.
#include <cstdio>
#include <random>
#include <vector>

#include "cuda_emulation.hpp"

// cp.async of the VGPU_MM_STAGES tilings (matmul.cu's shim hooks), landing as late as allowed.
#define VGPU_MM_ASYNC_SHIMS 1
inline void vgpu_cp_async16(float* smem, const float* gmem) { emulation::copy16(smem, gmem, true); }
inline void vgpu_cp_async_commit() { emulation::commit(); }
template <int N>
void vgpu_cp_async_wait() {
  emulation::wait_until(std::size_t{N});
}

#include "../../core/kernels/cuda/matmul.cu"

namespace {

// Runs C = A·B (m×k · k×n) through the kernel with its data offset floats into their buffers
// (offset 1 breaks the 16-byte alignment, so every block takes the checked path); returns
// whether every element is within 2·k·eps32·Σ|a||b| of the double-precision sum.
bool check(unsigned m, unsigned k, unsigned n, unsigned offset) {
  std::vector<float> A(std::size_t{m} * k + offset), B(std::size_t{k} * n + offset),
      C(std::size_t{m} * n + offset, NAN);
  std::mt19937 gen(m * 131 + k * 7 + n);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : A) v = dist(gen);
  for (float& v : B) v = dist(gen);
  const float *a = A.data() + offset, *b = B.data() + offset;
  float* c = C.data() + offset;
  constexpr unsigned tx = VGPU_MM_BN / VGPU_MM_TN, ty = VGPU_MM_BM / VGPU_MM_TM;
  const MatmulParams p{m, n, k, 0};
  emulation::launch((n + VGPU_MM_BN - 1) / VGPU_MM_BN, (m + VGPU_MM_BM - 1) / VGPU_MM_BM, tx, ty,
                    [&] { vgpu_matmul(a, b, c, p); });
  unsigned bad = 0;
  for (unsigned i = 0; i < m; ++i)
    for (unsigned j = 0; j < n; ++j) {
      const auto [ref, mag] = emulation::exact_dot(a, b, i, j, k, n);
      const double got = c[std::size_t{i} * n + j];
      if (!(std::fabs(got - ref) <= 2.0 * k * 1.1920929e-7 * mag + 1e-30) && bad++ < 3)
        std::printf("  C[%u][%u] = %.9g, want %.9g\n", i, j, got, ref);
    }
  std::printf("%s %ux%u·%ux%u%s: %s\n", VGPU_EMULATED_TILING, m, k, k, n, offset ? " (unaligned)" : "",
              bad ? "WRONG" : "ok");
  return bad == 0;
}

}  // namespace

int main() {
  struct Shape {
    unsigned m, k, n, offset;
  };
  // Awkward: 1-wide, partial blocks in every dimension, k not a multiple of BK, n not of 4, a
  // long K (4097: many double-buffer steps and a partial last one); aligned: whole blocks on the
  // float4 path with several K steps (256×512·512×256 fills even a 256×128 block), then the same
  // product unaligned; then whole blocks with 1-3 K steps of 8 (fewer steps than a cp.async
  // pipeline has stages: its prologue and empty groups).
  const Shape shapes[] = {{1, 1, 1, 0},      {17, 1000, 17, 0}, {1, 17, 1000, 0},   {1000, 1, 17, 0},
                          {129, 33, 131, 0}, {300, 4097, 5, 0}, {256, 512, 256, 0}, {256, 64, 256, 1},
                          {256, 8, 256, 0},  {256, 16, 256, 0}, {256, 24, 256, 0}};
  bool ok = true;
  for (const Shape& s : shapes) ok = check(s.m, s.k, s.n, s.offset) && ok;
  return ok ? 0 : 1;
}
