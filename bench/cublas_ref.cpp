// SPDX-License-Identifier: Apache-2.0
// bench/cublas_ref.cpp — dlopen'ed cuBLAS SGEMM reference (see cublas_ref.hpp).
#include "cublas_ref.hpp"

#include <algorithm>

namespace vgpu::bench {
namespace {

// The few CUDA runtime / cuBLAS entry points the reference needs, declared by signature so
// no toolkit header is needed to build.
using cudaMalloc_t = int (*)(void**, size_t);
using cudaFree_t = int (*)(void*);
using cudaMemcpy_t = int (*)(void*, const void*, size_t, int);
using cudaDeviceSynchronize_t = int (*)();
using cudaEventCreate_t = int (*)(void**);
using cudaEventRecord_t = int (*)(void*, void*);
using cudaEventSynchronize_t = int (*)(void*);
using cudaEventElapsedTime_t = int (*)(float*, void*, void*);
using cudaEventDestroy_t = int (*)(void*);
using cublasCreate_t = int (*)(void**);
using cublasDestroy_t = int (*)(void*);
using cublasSetMathMode_t = int (*)(void*, int);
using cublasSgemm_t = int (*)(void*, int, int, int, int, int, const float*, const float*, int, const float*, int,
                              const float*, float*, int);
using cublasGemmEx_t = int (*)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*, int,
                               int, const void*, void*, int, int, int, int);
constexpr int kCublasOpN = 0;
constexpr int kCublasDefaultMath = 0;          // CUBLAS_DEFAULT_MATH: 16-bit inputs on tensor cores
constexpr int kCublasPedanticMath = 2;         // CUBLAS_PEDANTIC_MATH: plain FP32, no TF32
constexpr int kCublasTf32Math = 3;             // CUBLAS_TF32_TENSOR_OP_MATH: SGEMM on TF32 tensor cores
constexpr int kCudaR16F = 2, kCudaR16BF = 14;  // cudaDataType_t
constexpr int kCublasCompute32F = 68;          // CUBLAS_COMPUTE_32F
constexpr int kCublasGemmDefault = -1;         // CUBLAS_GEMM_DEFAULT

void* open_first(std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (void* h = dlopen(n, RTLD_NOW | RTLD_LOCAL)) return h;
  return nullptr;
}

}  // namespace

CublasReference::CublasReference() {
  cudart_ = open_first({"libcudart.so.13", "libcudart.so.12", "libcudart.so"});
  cublas_ = open_first({"libcublas.so.13", "libcublas.so.12", "libcublas.so"});
  if (!cudart_ || !cublas_) {
    reason_ = "libcudart/libcublas not found";
    return;
  }
  auto create = sym<cublasCreate_t>(cublas_, "cublasCreate_v2");
  auto math = sym<cublasSetMathMode_t>(cublas_, "cublasSetMathMode");
  if (!create || !math || create(&handle_) != 0) {
    reason_ = "cublasCreate failed (no CUDA GPU or driver)";
    return;
  }
  math(handle_, kCublasPedanticMath);
  ok_ = true;
}

CublasReference::~CublasReference() {
  if (handle_) sym<cublasDestroy_t>(cublas_, "cublasDestroy_v2")(handle_);
}

double CublasReference::gemm_gflops(int n, DType dtype, int reps, bool tf32) {
  if (!ok_ || (dtype != DType::f32 && dtype != DType::f16 && dtype != DType::bf16)) return 0;
  auto cmalloc = sym<cudaMalloc_t>(cudart_, "cudaMalloc");
  auto cfree = sym<cudaFree_t>(cudart_, "cudaFree");
  auto cmemcpy = sym<cudaMemcpy_t>(cudart_, "cudaMemcpy");
  auto csync = sym<cudaDeviceSynchronize_t>(cudart_, "cudaDeviceSynchronize");
  auto ecreate = sym<cudaEventCreate_t>(cudart_, "cudaEventCreate");
  auto erecord = sym<cudaEventRecord_t>(cudart_, "cudaEventRecord");
  auto esync = sym<cudaEventSynchronize_t>(cudart_, "cudaEventSynchronize");
  auto etime = sym<cudaEventElapsedTime_t>(cudart_, "cudaEventElapsedTime");
  auto edestroy = sym<cudaEventDestroy_t>(cudart_, "cudaEventDestroy");
  auto sgemm = sym<cublasSgemm_t>(cublas_, "cublasSgemm_v2");
  auto gemm_ex = sym<cublasGemmEx_t>(cublas_, "cublasGemmEx");
  auto math = sym<cublasSetMathMode_t>(cublas_, "cublasSetMathMode");
  if (!gemm_ex && dtype != DType::f32) return 0;
  math(handle_, dtype != DType::f32 ? kCublasDefaultMath : tf32 ? kCublasTf32Math : kCublasPedanticMath);
  const size_t elem = dtype_size(dtype), bytes = size_t(n) * n * elem;
  void *a = nullptr, *b = nullptr, *c = nullptr;
  if (cmalloc(&a, bytes) || cmalloc(&b, bytes) || cmalloc(&c, bytes)) return 0;
  // Random data, as the vgpu side gets: all-zero inputs would let the GPU clock higher.
  std::vector<float> host(size_t(n) * n);
  unsigned state = 12345;
  for (float& v : host) v = float((state = state * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
  std::vector<unsigned char> bits(bytes);
  for (size_t i = 0; i < host.size(); ++i) set_element_value(dtype, bits.data(), i, host[i]);
  cmemcpy(a, bits.data(), bytes, 1);  // 1 = cudaMemcpyHostToDevice
  cmemcpy(b, bits.data(), bytes, 1);
  void *e0 = nullptr, *e1 = nullptr;
  ecreate(&e0);
  ecreate(&e1);
  const float alpha = 1, beta = 0;
  std::vector<double> gf;
  for (int r = 0; r < reps + 1; ++r) {
    erecord(e0, nullptr);
    if (dtype == DType::f32) {
      sgemm(handle_, kCublasOpN, kCublasOpN, n, n, n, &alpha, static_cast<float*>(a), n, static_cast<float*>(b), n,
            &beta, static_cast<float*>(c), n);
    } else {
      const int type = dtype == DType::f16 ? kCudaR16F : kCudaR16BF;
      gemm_ex(handle_, kCublasOpN, kCublasOpN, n, n, n, &alpha, a, type, n, b, type, n, &beta, c, type, n,
              kCublasCompute32F, kCublasGemmDefault);
    }
    erecord(e1, nullptr);
    esync(e1);
    float ms = 0;
    etime(&ms, e0, e1);
    if (r > 0) gf.push_back(2.0 * n * n * double(n) / (ms * 1e-3) / 1e9);  // first run warms up
  }
  csync();
  edestroy(e0);
  edestroy(e1);
  cfree(a);
  cfree(b);
  cfree(c);
  std::sort(gf.begin(), gf.end());
  return gf.empty() ? 0 : gf[gf.size() / 2];
}

}  // namespace vgpu::bench
