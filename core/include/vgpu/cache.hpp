// SPDX-License-Identifier: Apache-2.0
// vgpu/cache.hpp — the seed's VGPUCache: a drop-in matmul that keeps its kernels warm.
#pragma once

#include "vgpu/export.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "vgpu/device.hpp"
#include "vgpu/kernel_database.hpp"

namespace vgpu {

/// A dense row-major float32 matrix, the value type of Cache::matmul.
struct VGPU_API Matrix {
  std::uint32_t rows = 0, cols = 0;
  std::vector<float> data;  ///< rows*cols values, row-major

  Matrix() = default;
  /// Makes a rows×cols matrix filled with value.
  Matrix(std::uint32_t r, std::uint32_t c, float value = 0.0f)
      : rows(r), cols(c), data(std::size_t{r} * c, value) {}
  /// Returns element (r, c).
  float& operator()(std::uint32_t r, std::uint32_t c) { return data[std::size_t{r} * cols + c]; }
  /// Returns element (r, c).
  float operator()(std::uint32_t r, std::uint32_t c) const { return data[std::size_t{r} * cols + c]; }
};

/// The seed's VGPUCache: matmul(A, B) on the selected device, compiling once per shape and
/// reusing the persistent kernel afterwards. report() reads
/// "VGPUCache: 1 compiles, 99 cache hits, 100 dispatches" after 100 same-shape calls.
/// Thread-safety: safe to call from several threads (calls of one shape are serialised).
class VGPU_API Cache {
 public:
  /// Runs each shape on the device measured fastest for it (Runtime::global().select; the
  /// choice persists across processes, a failing device falls back to the next).
  Cache();
  /// Uses the given device.
  explicit Cache(Device device);

  /// Returns A·B; throws invalid_argument when A.cols != B.rows or a matrix is empty.
  Matrix matmul(const Matrix& a, const Matrix& b);
  /// Computes C[m×n] = A[m×k]·B[k×n] from raw row-major pointers.
  void matmul(const float* a, const float* b, float* c, std::uint32_t m, std::uint32_t k,
              std::uint32_t n);

  /// Returns how many calls had to build a persistent kernel (a new shape).
  std::uint64_t compiles() const { return db_.misses(); }
  /// Returns how many calls reused a persistent kernel.
  std::uint64_t hits() const { return db_.hits(); }
  /// Returns how many matmuls ran (each is one dispatch: the matmul plan has one step).
  std::uint64_t dispatches() const { return db_.hits() + db_.misses(); }
  /// Returns "VGPUCache: <compiles> compiles, <hits> cache hits, <dispatches> dispatches".
  std::string report() const;
  /// Returns the device the cache runs on (with selection: the device of the last call).
  Device device() const { return db_.device(); }

 private:
  KernelDatabase db_;
};

}  // namespace vgpu
