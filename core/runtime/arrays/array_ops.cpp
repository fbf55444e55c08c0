// SPDX-License-Identifier: Apache-2.0
// core/runtime/arrays/array_ops.cpp — the built-in ops on arrays, with numpy's shape and dtype rules.
#include "vgpu/array_ops.hpp"

#include <algorithm>
#include <limits>

#include "batched_matmul.hpp"
#include "buffer_pool.hpp"
#include "builtin_plans.hpp"
#include "device_core.hpp"
#include "dtype_plan.hpp"
#include "plan_batch.hpp"
#include "prepared_ops.hpp"
#include "vgpu/error.hpp"
#include "vgpu/ops.hpp"

namespace vgpu {
namespace {

using std::to_string;
using vgpu::to_string;

// Bits of an integer dtype's magnitude and whether it is signed (0 bits: not an integer).
struct IntInfo {
  int bits = 0;
  bool is_signed = false;
};
IntInfo int_info(DType d) {
  switch (d) {
    case DType::i8:
      return {8, true};
    case DType::u8:
      return {8, false};
    case DType::i32:
      return {32, true};
    case DType::u32:
      return {32, false};
    default:
      return {};
  }
}

// Float dtypes by numpy's order of precision (bf16 beside f16: neither holds the other).
int float_rank(DType d) {
  return d == DType::f16 || d == DType::bf16 ? 1 : d == DType::f32 ? 2 : d == DType::f64 ? 3 : 0;
}

void require_array(const Array& a, const char* op, const char* name) {
  if (!a)
    fail(ErrorCategory::invalid_argument, std::string(op) + ": " + name + " is an empty Array handle.",
         "pass an array made with Array::empty, zeros, from_host or from_external, or an op's result.");
}

// Throws unless every array is on the first one's device.
void same_device(const char* op, std::initializer_list<std::pair<const char*, const Array*>> arrays) {
  const auto& [first_name, first] = *arrays.begin();
  for (const auto& [name, a] : arrays)
    if (!(a->device() == first->device()))
      fail(ErrorCategory::invalid_argument,
           std::string(op) + ": " + first_name + " is " + first->describe() + " but " + name + " is " + a->describe() +
               "; vgpu never moves data between devices silently.",
           "move one with .to(device) (Array::to) so that both are on one device.");
}

// The dtype op computes on: every array's, which must be one of f32, f16 and bf16 (16-bit
// arrays are computed on in float32 and rounded once: dtype_plan.hpp); throws not_supported
// for another dtype or for arrays of different dtypes (vgpu converts nothing silently).
DType compute_dtype(const char* op, std::initializer_list<std::pair<const char*, const Array*>> arrays) {
  const auto& [first_name, first] = *arrays.begin();
  for (const auto& [name, a] : arrays) {
    if (!detail::builtin_ops_compute_in(a->dtype()))
      fail(ErrorCategory::not_supported,
           std::string(op) + " computes on float32, float16 and bfloat16 arrays, and " + name + " is " + a->describe() +
               "; vgpu does not convert it silently.",
           "cast it to float32 first (numpy: x.astype(numpy.float32); Python's vgpu.matmul and Cache.matmul: "
           "dtype=\"float32\" opts into that cast); docs/arrays.md lists what each op computes in.");
    if (a->dtype() != first->dtype())
      fail(ErrorCategory::not_supported,
           std::string(op) + ": " + first_name + " is " + first->describe() + " but " + name + " is " + a->describe() +
               "; the built-in ops take arrays of one dtype and convert nothing silently.",
           "convert one of them (Array::to_host + from_host, or numpy's astype) so both have one dtype.");
  }
  return first->dtype();
}

void same_shape(const char* op, const Array& a, const Array& b) {
  if (a.shape() != b.shape())
    fail(ErrorCategory::invalid_argument,
         std::string(op) + ": the arrays' shapes differ (" + a.describe() + ", " + b.describe() + ").",
         "pass arrays of one shape (reshape or broadcast them first).");
}

std::uint32_t dim32(const char* op, const char* what, std::uint64_t v) {
  if (v > std::numeric_limits<std::uint32_t>::max())
    fail(ErrorCategory::invalid_argument,
         std::string(op) + ": " + what + " = " + to_string(v) + " exceeds the 32-bit sizes of the kernels.",
         "split the problem into parts of at most 4294967295 rows or columns.");
  return static_cast<std::uint32_t>(v);
}

// The operands promoted to ≥ 2-D as np.matmul does, and their broadcast batch shape.
struct MatmulForm {
  Shape a, b;   // ≥ 2-D
  Shape batch;  // broadcast batch dimensions
  std::uint64_t m = 0, k = 0, n = 0;
};

MatmulForm matmul_form(const Shape& as, const Shape& bs) {
  if (as.empty() || bs.empty())
    fail(ErrorCategory::invalid_argument,
         "matmul: " + std::string(as.empty() ? "A" : "B") + " is 0-d (a scalar); matmul takes arrays of ≥ 1 dimension.",
         "multiply by a scalar with multiply(), or give the operand a dimension.");
  MatmulForm f;
  f.a = as.size() == 1 ? Shape{1, as[0]} : as;
  f.b = bs.size() == 1 ? Shape{bs[0], 1} : bs;
  f.m = f.a[f.a.size() - 2];
  f.k = f.a.back();
  f.n = f.b.back();
  if (f.k != f.b[f.b.size() - 2])
    fail(ErrorCategory::invalid_argument,
         "matmul: A has shape " + to_string(as) + " and B " + to_string(bs) + "; A's last dimension (" +
             to_string(f.k) + ") must equal B's " + (bs.size() == 1 ? "only" : "second-to-last") + " dimension (" +
             to_string(f.b[f.b.size() - 2]) + ").",
         "transpose or reshape so that A is (…, M, K) and B is (…, K, N).");
  f.batch = detail::broadcast_batch(f.a, f.b, as, bs);
  return f;
}

// A stack in one launch (batched_matmul.hpp); false where the device cannot run it so. tf32:
// TF32 allowed (op "matmul_tf32").
bool run_batched(const MatmulForm& f, const Array& a, const Array& b, const Array& c, bool tf32) {
  const Device& device = a.device();
  const DType dtype = a.dtype();
  const std::shared_ptr<const detail::PreparedOp> p = detail::device_arrays(device).ops.get(
      device,
      std::string(tf32 ? "matmul_tf32_batched" : "matmul_batched") + std::string(to_string(dtype)) + to_string(f.a) +
          to_string(f.b),
      [&](const Device& d) -> std::optional<KernelPlan> {
        std::optional<KernelPlan> plan = detail::batched_matmul_plan(d, f.a, f.b, dtype, tf32);
        // A plan native to dtype needs no conversions.
        if (!plan || dtype == DType::f32 || plan->tensors[0].dtype == dtype) return plan;
        const std::shared_ptr<const OpTuner> tuner = detail::op_tuner_of(d);
        if (!tuner) return std::nullopt;  // a stack a product at a time then says why
        return detail::with_dtype(std::move(*plan), dtype, d.info(), *tuner);
      });
  if (!p) return false;
  const Array args[] = {a, b, c};
  detail::run_prepared(device, *p, args);
  return true;
}

// A stack a product at a time, where one launch cannot run it (run_batched): the op's buffers
// over matrix i of each operand. On a device that uses host memory in place, views of the
// arrays' memory; otherwise device copies in and out of scratch matrices (tmp), which the
// device orders with the launches. op: "matmul" or "matmul_tf32" (ops::matmul_op).
void run_stack(const MatmulForm& f, const Array& a, const Array& b, const Array& c, const char* op) {
  const Device& device = a.device();
  detail::DeviceCore& core = detail::DeviceAccess::core(device);
  const std::uint32_t m = dim32("matmul", "M", f.m), k = dim32("matmul", "K", f.k), n = dim32("matmul", "N", f.n);
  const DType dtype = a.dtype();
  const std::uint64_t size = dtype_size(dtype);
  const std::uint64_t a_bytes = f.m * f.k * size, b_bytes = f.k * f.n * size, c_bytes = f.m * f.n * size;
  const std::uint64_t count = element_count(f.batch);
  const bool views = core.imports_host() && a.memory() == ArrayMemory::host && b.memory() == ArrayMemory::host &&
                     c.memory() == ArrayMemory::host;
  auto* pa = static_cast<unsigned char*>(a.data());
  auto* pb = static_cast<unsigned char*>(b.data());
  auto* pc = static_cast<unsigned char*>(c.data());
  const Shape matrix_a{m, k}, matrix_b{k, n}, matrix_c{m, n};
  // The views keep their arrays' memory alive as long as any view's buffer lives.
  auto keep = [](const Array& x) { return std::make_shared<Array>(x); };
  const auto ka = keep(a), kb = keep(b), kc = keep(c);
  Array ta, tb, tc;
  if (!views) {
    ta = Array::empty(device, dtype, matrix_a);
    tb = Array::empty(device, dtype, matrix_b);
    tc = Array::empty(device, dtype, matrix_c);
  }
  Device d = device;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t ia = detail::stack_index(f.a, f.batch, i), ib = detail::stack_index(f.b, f.batch, i);
    if (views) {
      const Array args[] = {Array::from_external(device, pa + ia * a_bytes, dtype, matrix_a, [ka] {}),
                            Array::from_external(device, pb + ib * b_bytes, dtype, matrix_b, [kb] {}),
                            Array::from_external(device, pc + i * c_bytes, dtype, matrix_c, [kc] {})};
      detail::run_prepared(device, op, {m, k, n}, dtype, args);
      continue;
    }
    d.copy(a.buffer(), ta.buffer(), a_bytes, ia * a_bytes, 0);
    d.copy(b.buffer(), tb.buffer(), b_bytes, ib * b_bytes, 0);
    const Array args[] = {ta, tb, tc};
    detail::run_prepared(device, op, {m, k, n}, dtype, args);
    d.copy(tc.buffer(), c.buffer(), c_bytes, 0, i * c_bytes);
  }
}

// Whether two arrays' elements overlap: one buffer, or overlapping host memory (arrays over
// the caller's memory may alias).
bool shares_memory(const Array& x, const Array& y) {
  if (!x.buffer() || !y.buffer()) return false;
  if (x.buffer() == y.buffer()) return true;
  if (x.memory() != ArrayMemory::host || y.memory() != ArrayMemory::host) return false;
  const auto* px = static_cast<const unsigned char*>(x.data());
  const auto* py = static_cast<const unsigned char*>(y.data());
  return px < py + y.nbytes() && py < px + x.nbytes();
}

}  // namespace

Shape matmul_shape(const Shape& a, const Shape& b) {
  const MatmulForm f = matmul_form(a, b);
  Shape out = f.batch;
  if (a.size() > 1) out.push_back(f.m);
  if (b.size() > 1) out.push_back(f.n);
  return out;
}

std::optional<DType> promote_types(DType a, DType b) {
  if (a == b) return a;
  const int fa = float_rank(a), fb = float_rank(b);
  if (fa && fb) {
    if (fa == 1 && fb == 1) return DType::f32;  // f16 with bf16: neither holds the other
    return fa > fb ? a : b;
  }
  if (fa || fb) {  // a float with an integer: a float that holds the integer's values
    const DType fl = fa ? a : b;
    const IntInfo in = int_info(fa ? b : a);
    if (fl == DType::bf16) return DType::bf16;  // torch's rule; numpy has no bf16
    const int need = in.bits <= 8 ? 1 : 3;      // 8-bit: float16; 32-bit: float64
    const int have = float_rank(fl);
    return have >= need ? fl : (need == 1 ? DType::f16 : DType::f64);
  }
  const IntInfo x = int_info(a), y = int_info(b);
  if (x.is_signed == y.is_signed) return x.bits >= y.bits ? a : b;
  const IntInfo& u = x.is_signed ? y : x;
  const IntInfo& s = x.is_signed ? x : y;
  if (s.bits > u.bits) return x.is_signed ? a : b;  // u8 with i32: i32
  return std::nullopt;                              // u8 with i8: int16; u32 with i32: int64
}

void matmul(const Array& a, const Array& b, const Array& out, ops::Precision precision) {
  require_array(a, "matmul", "A");
  require_array(b, "matmul", "B");
  require_array(out, "matmul", "out");
  same_device("matmul", {{"A", &a}, {"B", &b}, {"out", &out}});
  const MatmulForm f = matmul_form(a.shape(), b.shape());
  const Shape want = matmul_shape(a.shape(), b.shape());
  const DType dtype = compute_dtype("matmul", {{"A", &a}, {"B", &b}});
  // TF32 is about float32 operands: a 16-bit matmul is the same op either way (one plan, one choice).
  const char* op = dtype == DType::f32 ? ops::matmul_op(precision) : "matmul";
  if (out.dtype() != dtype || out.shape() != want)
    fail(ErrorCategory::invalid_argument,
         "matmul: out is " + out.describe() + " but A @ B is " + std::string(to_string(dtype)) + to_string(want) + ".",
         "pass out of dtype " + std::string(numpy_name(dtype)) + " and shape " + to_string(want) +
             ", or let matmul(A, B) make it.");
  if (shares_memory(out, a) || shares_memory(out, b))
    fail(ErrorCategory::invalid_argument,
         "matmul: out shares memory with A or B; the kernel would read what it overwrote.",
         "pass a separate out array (or let matmul(A, B) make one).");
  if (out.size() == 0) return;
  if (f.k == 0) {  // an empty sum: zeros, as numpy
    std::vector<unsigned char> zeros(static_cast<std::size_t>(out.nbytes()));
    const_cast<Array&>(out).write(zeros.data());
    return;
  }
  const std::uint64_t b_batch = element_count(Shape(f.b.begin(), f.b.end() - 2));
  if (b_batch == 1) {
    // One B for the whole stack: the stack of A is one (batch·M)×K matrix, one launch.
    const std::uint64_t rows = checked_mul(element_count(f.batch), f.m, "matmul's rows");
    const std::uint32_t m = dim32("matmul", "batch × M", rows), k = dim32("matmul", "K", f.k),
                        n = dim32("matmul", "N", f.n);
    // A repeats across batch dimensions only B has: then it is not one contiguous stack.
    if (element_count(Shape(f.a.begin(), f.a.end() - 2)) == element_count(f.batch)) {
      const Array args[] = {a, b, out};
      detail::run_prepared(a.device(), op, {m, k, n}, dtype, args);
      return;
    }
  }
  if (!run_batched(f, a, b, out, std::string_view(op) == "matmul_tf32")) run_stack(f, a, b, out, op);
}

Array matmul(const Array& a, const Array& b, ops::Precision precision) {
  require_array(a, "matmul", "A");
  require_array(b, "matmul", "B");
  same_device("matmul", {{"A", &a}, {"B", &b}});
  const DType dtype = compute_dtype("matmul", {{"A", &a}, {"B", &b}});
  Array out = Array::empty(a.device(), dtype, matmul_shape(a.shape(), b.shape()));
  matmul(a, b, out, precision);
  return out;
}

namespace {

Array elementwise(const char* op, const Array& a, const Array& b) {
  require_array(a, op, "a");
  require_array(b, op, "b");
  same_device(op, {{"a", &a}, {"b", &b}});
  const DType dtype = compute_dtype(op, {{"a", &a}, {"b", &b}});
  same_shape(op, a, b);
  Array out = Array::empty(a.device(), dtype, a.shape());
  if (a.size() == 0) return out;
  const Array args[] = {a, b, out};
  detail::run_prepared(a.device(), op, {a.size()}, dtype, args);
  return out;
}

}  // namespace

Array add(const Array& a, const Array& b) { return elementwise("add", a, b); }
Array multiply(const Array& a, const Array& b) { return elementwise("mul", a, b); }

void axpy(const Array& alpha, const Array& x, const Array& y) {
  require_array(alpha, "axpy", "alpha");
  require_array(x, "axpy", "x");
  require_array(y, "axpy", "y");
  same_device("axpy", {{"alpha", &alpha}, {"x", &x}, {"y", &y}});
  const DType dtype = compute_dtype("axpy", {{"alpha", &alpha}, {"x", &x}, {"y", &y}});
  same_shape("axpy", x, y);
  if (alpha.size() != 1)
    fail(ErrorCategory::invalid_argument, "axpy: alpha is " + alpha.describe() + "; it must hold one value.",
         "pass alpha as an array of one element (shape [] or [1]).");
  if (shares_memory(y, x) || shares_memory(y, alpha))
    fail(ErrorCategory::invalid_argument, "axpy: y shares memory with x or alpha.", "pass a separate y array.");
  if (y.size() == 0) return;
  const Array args[] = {alpha, x, y};
  detail::run_prepared(x.device(), "axpy", {x.size()}, dtype, args);
}

Array sum(const Array& x) {
  require_array(x, "sum", "x");
  const DType dtype = compute_dtype("sum", {{"x", &x}});
  Array out = Array::zeros(x.device(), dtype, Shape{});
  if (x.size() == 0) return out;
  const Array args[] = {x, out};
  detail::run_prepared(x.device(), "reduce_sum", {x.size()}, dtype, args);
  return out;
}

Array softmax_rows(const Array& x) {
  require_array(x, "softmax_rows", "x");
  const DType dtype = compute_dtype("softmax_rows", {{"x", &x}});
  if (x.ndim() == 0)
    fail(ErrorCategory::invalid_argument, "softmax_rows: x is 0-d; it takes rows along the last axis.",
         "pass an array of ≥ 1 dimension.");
  Array out = Array::empty(x.device(), dtype, x.shape());
  if (x.size() == 0) return out;
  const std::uint64_t cols = x.shape().back(), rows = x.size() / cols;
  const Array args[] = {x, out};
  detail::run_prepared(x.device(), "softmax_rows",
                       {dim32("softmax_rows", "rows", rows), dim32("softmax_rows", "cols", cols)}, dtype, args);
  return out;
}

}  // namespace vgpu
