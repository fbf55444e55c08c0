// SPDX-License-Identifier: Apache-2.0
// tests/conformance/dtype_test.cpp — every built-in op on float32, float16 and bfloat16 arrays on
// every device under test, against a double-precision reference of the same (exactly
// representable) inputs. The 16-bit ops compute and accumulate in float32 and round each result
// once (core/runtime/kernel_cache/dtype_plan.hpp), so their stated tolerance is the float32 bound
// of the op (support/numerics.hpp, vgpu/tolerance.hpp) plus half a unit in the last place of the
// 16-bit result (unit roundoff u = 2^-11 for f16, 2^-8 for bf16) and, for f16, half its smallest
// subnormal (2^-25) absolute: |got − exact| ≤ bound32 + u·(|exact| + bound32) + 2^-25
// (vgpu::tolerance::narrowed).
// Each (device, op, dtype) prints one line "numerics: {json}" with the largest relative error
// and the largest error in units of the result's last place (ULPs): Catch's JUnit reporter keeps
// it in the case's system-out, and docs/numerics.md tabulates it.
#include "support/catch.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "conformance/conformance.hpp"
#include "support/numerics.hpp"

namespace vgpu_test {
namespace {

using vgpu::Array;
using vgpu::DType;
using vgpu::Shape;

constexpr DType kDTypes[] = {DType::f32, DType::f16, DType::bf16};

Array upload(const vgpu::Device& device, const std::vector<float>& v, DType dtype, Shape shape) {
  const auto bytes = encode(v, dtype);
  return Array::from_host(device, dtype, std::move(shape), bytes.data());
}

std::vector<float> download(const Array& a) {
  std::vector<unsigned char> bytes(static_cast<std::size_t>(a.nbytes()));
  a.read(bytes.data());
  return decode(bytes, a.dtype());
}

// Unit roundoff of dtype (half an ULP at 1), its mantissa bits, its smallest subnormal and normal.
struct Format {
  double u;
  int mantissa;
  double tiny, normal;  // smallest subnormal and smallest normal
};
Format format_of(DType dtype) {
  if (dtype == DType::f16) return {0x1p-11, 10, 0x1p-24, 0x1p-14};
  if (dtype == DType::bf16) return {0x1p-8, 7, 0x1p-133, 0x1p-126};
  return {0x1p-24, 23, 0x1p-149, 0x1p-126};
}

// The size of one unit in the last place of dtype at x (the subnormal spacing below the normals).
double ulp(double x, DType dtype) {
  const Format f = format_of(dtype);
  const double ax = std::abs(x);
  if (ax == 0) return f.tiny;
  const double u = std::ldexp(1.0, std::ilogb(ax) - f.mantissa);
  return u < f.tiny ? f.tiny : u;
}

// Largest errors seen for one (device, op, dtype), printed once at the end of the case.
struct Worst {
  double rel = 0, ulps = 0, ratio = 0;
  std::size_t elements = 0;
};

// Checks got against ref (exact values and float32 bounds) widened for dtype's one rounding.
void check(const std::vector<float>& got, const Reference& ref, DType dtype, Worst& worst) {
  REQUIRE(got.size() == ref.value.size());
  const Format f = format_of(dtype);
  std::size_t bad = 0, first_bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double want = ref.value[i], err = std::abs(double(got[i]) - want);
    const double bound = vgpu::tolerance::narrowed(want, ref.bound[i], dtype);
    if (!(err <= bound)) {  // NaN fails too: an element never written
      if (bad++ == 0) first_bad = i;
      continue;
    }
    // Relative error among the normal results (a result that underflows has relative error up to 1).
    if (std::abs(want) >= f.normal) worst.rel = std::max(worst.rel, err / std::abs(want));
    worst.ulps = std::max(worst.ulps, err / ulp(want, dtype));
    if (bound > 0) worst.ratio = std::max(worst.ratio, err / bound);
  }
  worst.elements += got.size();
  INFO(bad << " of " << got.size() << " out of tolerance; first at [" << first_bad << "]: got "
           << (bad ? got[first_bad] : 0.0f) << ", want " << (bad ? ref.value[first_bad] : 0.0));
  CHECK(bad == 0);
}

void report(const vgpu::Device& device, const char* op, DType dtype, const Worst& w) {
  std::cout << "numerics: {\"device\": \"" << device.info().id() << "\", \"op\": \"" << op << "\", \"dtype\": \""
            << vgpu::numpy_name(dtype) << "\", \"elements\": " << w.elements << ", \"max_rel_err\": " << w.rel
            << ", \"max_ulps\": " << w.ulps << ", \"max_err_over_bound\": " << w.ratio << "}" << std::endl;
}

}  // namespace

TEST_CASE("dtypes: matmul on float32, float16 and bfloat16 arrays against fp64", "[dtype][matmul]") {
  struct Size {
    std::uint64_t m, k, n;
  };
  // {70, 45, 530}: several 32-row blocks and 256-column tasks of the CPU's AMX kernel.
  constexpr Size kSizes[] = {{1, 1, 1},   {1, 17, 3},   {17, 33, 15}, {64, 64, 64},
                             {3, 300, 5}, {65, 7, 129}, {70, 45, 530}};
  for (vgpu::Device device : devices_under_test())
    for (DType dtype : kDTypes) {
      Worst worst;
      for (const Size& s : kSizes) {
        INFO(device.info().id() << " matmul " << s.m << "x" << s.k << "x" << s.n << " " << vgpu::numpy_name(dtype));
        const auto a = representable(random_floats(s.m * s.k, s.m + s.k), dtype);
        const auto b = representable(random_floats(s.k * s.n, s.k + s.n + 1), dtype);
        Array out = upload(device, std::vector<float>(s.m * s.n, kNaN), dtype, {s.m, s.n});  // poisoned
        vgpu::matmul(upload(device, a, dtype, {s.m, s.k}), upload(device, b, dtype, {s.k, s.n}), out);
        CHECK(out.dtype() == dtype);
        check(download(out), matmul_reference(a, b, s.m, s.k, s.n), dtype, worst);
      }
      report(device, "matmul", dtype, worst);
      note_exercised(device);
    }
}

TEST_CASE("dtypes: stacks of matmuls in every dtype, and with TF32 allowed, against fp64",
          "[dtype][matmul][stack][tf32]") {
  // (3, m, k) @ (k, n): one launch of (3m)×k; (3, m, k) @ (3, k, n) and (2, 1, m, k) @ (3, k, n):
  // the batched kernel (on CUDA sm_80+ its tensor-core form). Each product checked on its own.
  struct Stack {
    Shape a, b;
  };
  const std::uint64_t m = 17, k = 40, n = 24;
  const Stack stacks[] = {{{3, m, k}, {k, n}}, {{3, m, k}, {3, k, n}}, {{2, 1, m, k}, {3, k, n}}};
  for (vgpu::Device device : devices_under_test())
    for (DType dtype : kDTypes)
      for (vgpu::ops::Precision precision : {vgpu::ops::Precision::highest, vgpu::ops::Precision::tf32}) {
        const bool tf32 = precision == vgpu::ops::Precision::tf32 && dtype == DType::f32;
        Worst worst;
        for (const Stack& st : stacks) {
          INFO(device.info().id() << " " << vgpu::to_string(st.a) << " @ " << vgpu::to_string(st.b) << " "
                                  << vgpu::numpy_name(dtype) << " " << vgpu::ops::to_string(precision));
          const std::uint64_t na = vgpu::element_count(st.a), nb = vgpu::element_count(st.b);
          const auto a = representable(random_floats(na, na + 7), dtype);
          const auto b = representable(random_floats(nb, nb + 8), dtype);
          const Array c = vgpu::matmul(upload(device, a, dtype, st.a), upload(device, b, dtype, st.b), precision);
          const Shape want = vgpu::matmul_shape(st.a, st.b);
          REQUIRE(c.shape() == want);
          const std::vector<float> got = download(c);
          const std::uint64_t products = vgpu::element_count(want) / (m * n);
          for (std::uint64_t i = 0; i < products; ++i) {
            // Product i's matrices: np.matmul's broadcasting (stack_index of each operand).
            const std::uint64_t ia = st.a.size() == 2 ? 0 : (st.a[0] == 2 ? i / 3 : i);
            const std::uint64_t ib = st.b.size() == 2 ? 0 : i % 3;
            const std::vector<float> ai(a.begin() + ia * m * k, a.begin() + (ia + 1) * m * k);
            const std::vector<float> bi(b.begin() + ib * k * n, b.begin() + (ib + 1) * k * n);
            const std::vector<float> ci(got.begin() + i * m * n, got.begin() + (i + 1) * m * n);
            check(ci, matmul_reference(ai, bi, m, k, n, tf32), dtype, worst);
          }
        }
        note_exercised(device);
      }
}

TEST_CASE("dtypes: add, mul and axpy on float32, float16 and bfloat16 arrays against fp64", "[dtype][add][mul][axpy]") {
  constexpr std::uint64_t kSizes[] = {1, 2, 15, 16, 17, 255, 1000, 16385};
  for (vgpu::Device device : devices_under_test())
    for (DType dtype : kDTypes) {
      Worst add, mul, axpy;
      for (std::uint64_t n : kSizes) {
        INFO(device.info().id() << " n=" << n << " " << vgpu::numpy_name(dtype));
        auto a = representable(random_floats(n, n, -8.0f, 8.0f), dtype);
        const auto b = representable(random_floats(n, n + 1, -8.0f, 8.0f), dtype);
        if (n > 3) a[n / 2] = -b[n / 2];  // an exact zero must come out exactly zero
        const Array da = upload(device, a, dtype, {n}), db = upload(device, b, dtype, {n});
        const Array sum = vgpu::add(da, db), product = vgpu::multiply(da, db);
        CHECK(sum.dtype() == dtype);
        check(download(sum), binary_reference(a, b, false), dtype, add);
        check(download(product), binary_reference(a, b, true), dtype, mul);
        const float alpha = representable({random_floats(1, n + 2, -4.0f, 4.0f)[0]}, dtype)[0];
        Array y = upload(device, b, dtype, {n});
        vgpu::axpy(upload(device, {alpha}, dtype, {1}), da, y);
        check(download(y), axpy_reference(alpha, a, b), dtype, axpy);
      }
      report(device, "add", dtype, add);
      report(device, "mul", dtype, mul);
      report(device, "axpy", dtype, axpy);
      note_exercised(device);
    }
}

TEST_CASE("dtypes: sum and softmax_rows on float32, float16 and bfloat16 arrays against fp64",
          "[dtype][reduce][softmax]") {
  for (vgpu::Device device : devices_under_test())
    for (DType dtype : kDTypes) {
      Worst sum, softmax;
      for (std::uint64_t n : {1ull, 17ull, 16385ull, 100003ull}) {
        INFO(device.info().id() << " sum n=" << n << " " << vgpu::numpy_name(dtype));
        const auto x = representable(random_floats(n, n), dtype);
        const Array s = vgpu::sum(upload(device, x, dtype, {n}));
        CHECK(s.dtype() == dtype);
        check(download(s), sum_reference(x), dtype, sum);
      }
      struct Rows {
        std::uint64_t rows, cols;
      };
      for (const Rows& r : {Rows{1, 1}, Rows{3, 17}, Rows{5, 1000}, Rows{2, 4099}}) {
        INFO(device.info().id() << " softmax_rows " << r.rows << "x" << r.cols << " " << vgpu::numpy_name(dtype));
        const auto x = representable(random_floats(r.rows * r.cols, r.cols, -6.0f, 6.0f), dtype);
        const Array out = vgpu::softmax_rows(upload(device, x, dtype, {r.rows, r.cols}));
        check(download(out), softmax_reference(x, r.rows, r.cols), dtype, softmax);
      }
      report(device, "sum", dtype, sum);
      report(device, "softmax_rows", dtype, softmax);
      note_exercised(device);
    }
}

TEST_CASE("dtypes: a 16-bit product is rounded once to nearest even, bit for bit as vgpu/half.hpp, on every device",
          "[dtype][rounding]") {
  // The product of two 16-bit floats (≤ 22 significant bits) is exact in float32, so mul's one
  // rounding is the whole error: the device's bits must equal vgpu/half.hpp's rounding of the
  // float32 product, ties, overflow past the largest finite value, f16 subnormals and the
  // specials (∞·0 = NaN, ±∞) included. bf16 products stay clear of float32's subnormals,
  // which GPUs may flush.
  const float inf = std::numeric_limits<float>::infinity();
  for (vgpu::Device device : devices_under_test())
    for (DType dtype : {DType::f16, DType::bf16}) {
      INFO(device.info().id() << " " << vgpu::numpy_name(dtype));
      std::vector<float> x = {1.0f + 0x1p-7f, 1.5f, 255.9f, 256.0f,   0x1p-12f, 3 * 0x1p-13f, -0x1p-7f, inf, inf,
                              -inf,           0.0f, -0.0f,  65504.0f, 0x1p-10f, 1.0f,         3.0f};
      std::vector<float> y = {1.0f + 0x1p-7f, 1.0f + 0x1p-10f, 256.0f, 256.0f, 0x1p-13f, 0x1p-13f, 0x1p-9f,
                              0.0f,           -2.0f,           -inf,   5.0f,   7.0f,     -1.0f,    0x1p-10f,
                              1.0f,           1.0f / 3};
      const std::vector<float> rx = random_floats(1001, 7, -300.0f, 300.0f),
                               ry = random_floats(1001, 8, -300.0f, 300.0f);
      x.insert(x.end(), rx.begin(), rx.end());
      y.insert(y.end(), ry.begin(), ry.end());
      x = representable(x, dtype);
      y = representable(y, dtype);
      std::vector<float> exact(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) exact[i] = x[i] * y[i];  // exact in float32
      const std::vector<unsigned char> want = encode(exact, dtype);
      const Array got_array =
          vgpu::multiply(upload(device, x, dtype, {x.size()}), upload(device, y, dtype, {y.size()}));
      std::vector<unsigned char> got(want.size());
      got_array.read(got.data());
      const std::vector<float> got_values = decode(got, dtype);
      std::size_t bad = 0, first = 0;
      for (std::size_t i = 0; i < exact.size(); ++i) {
        const bool same =
            std::isnan(exact[i]) ? std::isnan(got_values[i]) : std::memcmp(&got[2 * i], &want[2 * i], 2) == 0;
        if (!same && bad++ == 0) first = i;
      }
      INFO(bad << " of " << exact.size() << " products differ; first at [" << first << "]: " << x[first] << " * "
               << y[first] << " = " << exact[first] << ", got " << got_values[first]);
      CHECK(bad == 0);
      note_exercised(device);
    }
}

}  // namespace vgpu_test
