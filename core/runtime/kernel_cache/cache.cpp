// SPDX-License-Identifier: Apache-2.0
// core/runtime/kernel_cache/cache.cpp — the seed's VGPUCache on top of KernelDatabase.
#include "vgpu/cache.hpp"

#include "vgpu/error.hpp"
#include "vgpu/runtime.hpp"
#include "vgpu/selection.hpp"

namespace vgpu {

namespace detail {

void check_matmul_operands(const Matrix& a, const Matrix& b) {
  auto check = [](const Matrix& m, const char* name) {
    if (m.rows == 0 || m.cols == 0)
      fail(ErrorCategory::invalid_argument,
           std::string("matmul: matrix ") + name + " is empty (" + std::to_string(m.rows) + "x" +
               std::to_string(m.cols) + ").",
           "pass matrices with at least one row and one column.");
    if (m.data.size() != std::size_t{m.rows} * m.cols)
      fail(ErrorCategory::invalid_argument,
           std::string("matmul: matrix ") + name + " is " + std::to_string(m.rows) + "x" + std::to_string(m.cols) +
               " but holds " + std::to_string(m.data.size()) + " values.",
           "keep data.size() == rows*cols (construct with Matrix(rows, cols)).");
  };
  check(a, "A");
  check(b, "B");
  if (a.cols != b.rows)
    fail(ErrorCategory::invalid_argument,
         "matmul: A is " + std::to_string(a.rows) + "x" + std::to_string(a.cols) + " and B is " +
             std::to_string(b.rows) + "x" + std::to_string(b.cols) + "; A's columns must equal B's rows.",
         "transpose or reshape so that A is M×K and B is K×N.");
}

}  // namespace detail

Matrix Cache::matmul(const Matrix& a, const Matrix& b, ops::Precision precision) {
  detail::check_matmul_operands(a, b);
  Matrix c(a.rows, b.cols);
  matmul(a.data.data(), b.data.data(), c.data.data(), a.rows, a.cols, b.cols, precision);
  return c;
}

Device Cache::device_for(DType dtype, std::uint32_t m, std::uint32_t k, std::uint32_t n,
                         ops::Precision precision) const {
  if (multi_ || !db_.selects()) return device();  // a given device (over a set: its first)
  // TF32 is about float32 operands: a 16-bit matmul is selected as "matmul" either way.
  return select(Runtime::global(), dtype == DType::f32 ? ops::matmul_op(precision) : "matmul", {m, k, n}, dtype);
}

std::string Cache::report() const {
  std::string s = "VGPUCache: " + std::to_string(compiles()) + " compiles, " + std::to_string(hits()) +
                  " cache hits, " + std::to_string(dispatches()) + " dispatches";
  if (const std::uint64_t e = evictions(); e != 0) s += ", " + std::to_string(e) + " evictions";
  return s;
}

}  // namespace vgpu
