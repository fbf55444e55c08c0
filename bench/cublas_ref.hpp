// SPDX-License-Identifier: Apache-2.0
// bench/cublas_ref.hpp — cuBLAS SGEMM (and cublasGemmEx on float16 / bfloat16) as a reference
// column, loaded with dlopen so the bench builds without the CUDA toolkit and runs (without that
// column) where cuBLAS is missing.
#pragma once

#include <dlfcn.h>

#include <string>
#include <vector>

#include "vgpu/types.hpp"

namespace vgpu::bench {

/// cuBLAS GEMMs timed with CUDA events; available() is false where libcublas/libcudart are absent.
/// Thread-safety: one thread at a time.
class CublasReference {
 public:
  /// Loads libcudart and libcublas (CUDA 13, then 12); records why when they are missing.
  CublasReference();
  ~CublasReference();
  /// Returns whether cuBLAS could be loaded and a GPU initialised.
  bool available() const { return ok_; }
  /// Returns why cuBLAS is unavailable.
  const std::string& reason() const { return reason_; }
  /// Returns the median GFLOP/s of an n×n×n SGEMM (TF32 off) over reps runs, or 0 on failure.
  double sgemm_gflops(int n, int reps) { return gemm_gflops(n, DType::f32, reps); }
  /// Returns the median GFLOP/s of an n×n×n GEMM on dtype (f32: SGEMM with TF32 off, or on where
  /// tf32; f16, bf16: cublasGemmEx with 16-bit A, B and C and float32 accumulation, tensor cores
  /// allowed) over reps runs, or 0 on failure or another dtype.
  double gemm_gflops(int n, DType dtype, int reps, bool tf32 = false);

 private:
  template <class F>
  F sym(void* lib, const char* name) {
    return reinterpret_cast<F>(dlsym(lib, name));
  }
  void* cudart_ = nullptr;
  void* cublas_ = nullptr;
  void* handle_ = nullptr;
  bool ok_ = false;
  std::string reason_;
};

}  // namespace vgpu::bench
