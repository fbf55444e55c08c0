// SPDX-License-Identifier: Apache-2.0
// tests/contract/arrays_test.cpp — vgpu::Array on every backend: every dtype stored and read back
// bit for bit; a chain of ops that moves nothing to the host until the end (counters prove it);
// np.matmul's shape rules against an independent reference; errors for wrong dtype, shape and
// device; memory used in place where the device allows it (pointer identity); and lifetime (an
// array outliving its Runtime, its device lost).
#include <algorithm>
#include <cstring>
#include <random>

#include "contract/contract.hpp"
#include "support/expect_error.hpp"
#include "support/numerics.hpp"
#include "vgpu/testing.hpp"

namespace vgpu_test::contract {
namespace {

using vgpu::Array;
using vgpu::DType;
using vgpu::Shape;

constexpr DType kEveryDType[] = {DType::f32, DType::i32, DType::u32, DType::f64,
                                 DType::i8,  DType::u8,  DType::f16, DType::bf16};

std::vector<unsigned char> random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  return v;
}

std::vector<float> read_floats(const Array& a) {
  std::vector<float> v(a.size(), kNaN);
  a.read(v.data());
  return v;
}

Array floats_on(const vgpu::Device& device, const std::vector<float>& v, Shape shape) {
  return Array::from_host(device, DType::f32, std::move(shape), v.data());
}

// np.matmul computed with loops, independent of vgpu's broadcasting code: both operands are
// expanded to the broadcast batch first, element by element.
Reference numpy_matmul_reference(const std::vector<float>& a, const Shape& as, const std::vector<float>& b,
                                 const Shape& bs) {
  Shape pa = as.size() == 1 ? Shape{1, as[0]} : as, pb = bs.size() == 1 ? Shape{bs[0], 1} : bs;
  const std::size_t m = pa[pa.size() - 2], k = pa.back(), n = pb.back();
  while (pa.size() < pb.size()) pa.insert(pa.begin(), 1);
  while (pb.size() < pa.size()) pb.insert(pb.begin(), 1);
  const std::size_t nb = pa.size() - 2;
  std::size_t batch = 1;
  for (std::size_t d = 0; d < nb; ++d) batch *= std::max(pa[d], pb[d]);
  Reference ref;
  for (std::size_t i = 0; i < batch; ++i) {
    // Coordinates of batch entry i, and each operand's matrix there (1-sized dimensions repeat).
    std::size_t rest = i, ia = 0, ib = 0, sa = 1, sb = 1;
    for (std::size_t d = nb; d-- > 0;) {
      const std::size_t dim = std::max(pa[d], pb[d]), c = rest % dim;
      rest /= dim;
      ia += (pa[d] == 1 ? 0 : c) * sa;
      ib += (pb[d] == 1 ? 0 : c) * sb;
      sa *= pa[d];
      sb *= pb[d];
    }
    for (std::size_t r = 0; r < m; ++r)
      for (std::size_t c = 0; c < n; ++c) {
        double s = 0, mag = 0;
        for (std::size_t p = 0; p < k; ++p) {
          const double x = a[ia * m * k + r * k + p], y = b[ib * k * n + p * n + c];
          s += x * y;
          mag += std::abs(x * y);
        }
        ref.value.push_back(s);
        ref.bound.push_back(1e-5 * mag + 1e-6);
      }
  }
  return ref;
}

}  // namespace

CONTRACT_CASE("arrays: every dtype is stored and read back bit for bit, copied on the device and reshaped", "[arrays]",
              every_backend) {
  if (const std::string& why = why_unavailable(backend); !why.empty()) return skip(why);
  vgpu::Device device = open_device(backend);
  const Shape shape{3, 5, 7};  // 105 elements: no size a kernel or allocator rounds to
  for (const DType dtype : kEveryDType) {
    INFO("dtype " << vgpu::to_string(dtype));
    const std::size_t bytes = 105 * vgpu::dtype_size(dtype);
    const std::vector<unsigned char> in = random_bytes(bytes, static_cast<int>(dtype) + 1);
    const Array a = Array::from_host(device, dtype, shape, in.data());
    CHECK(a.dtype() == dtype);
    CHECK(a.shape() == shape);
    CHECK(a.nbytes() == bytes);
    std::vector<unsigned char> out(bytes, 0xAB);
    a.read(out.data());
    CHECK(out == in);
    const Array b = a.copy();
    CHECK_FALSE(b.buffer() == a.buffer());
    std::fill(out.begin(), out.end(), 0xCD);
    b.reshape({105}).read(out.data());
    CHECK(out == in);
    const Array z = Array::zeros(device, dtype, {2, 0, 4});
    CHECK(z.size() == 0);
    CHECK_FALSE(z.buffer());
    std::vector<unsigned char> zeros(bytes, 0xEE);
    Array::zeros(device, dtype, shape).read(zeros.data());
    CHECK(std::all_of(zeros.begin(), zeros.end(), [](unsigned char c) { return c == 0; }));
  }
  REQUIRE_VGPU_ERROR(invalid_argument, "cannot reshape", Array::zeros(device, DType::f32, {4, 5}).reshape({3, 7}));
  // Where the elements are, as code outside vgpu sees them.
  const Array a = Array::zeros(device, DType::f32, {16});
  if (backend.kind == vgpu::BackendKind::cpu) {
    CHECK(a.memory() == vgpu::ArrayMemory::host);
    CHECK(a.data() != nullptr);
  } else if (backend.kind == vgpu::BackendKind::cuda) {
    CHECK(a.memory() == vgpu::ArrayMemory::cuda_device);
    CHECK(a.data() != nullptr);
  } else {
    CHECK(a.memory() == vgpu::ArrayMemory::device_only);
    CHECK(a.data() == nullptr);
  }
}

CONTRACT_CASE("arrays: a chain of matmul, add, softmax_rows and sum moves no data to the host until read", "[arrays]",
              every_backend) {
  if (const std::string& why = why_unavailable(backend); !why.empty()) return skip(why);
  vgpu::Device device = open_device(backend);
  const std::size_t m = 37, k = 53, n = 29;  // not multiples of any tile
  const std::vector<float> a = random_floats(m * k, 1), b = random_floats(k * n, 2), d = random_floats(m * n, 3);
  const Array A = floats_on(device, a, {m, k}), B = floats_on(device, b, {k, n}), D = floats_on(device, d, {m, n});
  // The first use of each shape plans it, which may time the op's variants on the device (and
  // read their results back); the chain itself then moves nothing.
  (void)vgpu::sum(vgpu::softmax_rows(vgpu::add(vgpu::matmul(A, B), D)));
  const vgpu::CounterSnapshot before = device.counters();
  const Array C = vgpu::matmul(A, B);
  const Array E = vgpu::add(C, D);
  const Array F = vgpu::softmax_rows(E);
  const Array S = vgpu::sum(F);
  const vgpu::CounterSnapshot during = device.counters() - before;
  CHECK(during.bytes_up == 0);
  CHECK(during.bytes_down == 0);
  CHECK(during.dispatches >= 4);
  // Read back: only now does data move, and exactly the arrays read.
  std::vector<float> f = read_floats(F);
  std::vector<float> s = read_floats(S);
  CHECK((device.counters() - before).bytes_down == (m * n + 1) * 4);
  CHECK((device.counters() - before).bytes_up == 0);
  // The reference of the chain, in double.
  const Reference c_ref = matmul_reference(a, b, m, k, n);
  std::vector<float> e(m * n);
  for (std::size_t i = 0; i < m * n; ++i) e[i] = static_cast<float>(c_ref.value[i] + d[i]);
  const Comparison cf = compare(f, softmax_reference(e, m, n));
  INFO("softmax_rows(matmul + add): " << cf.describe());
  CHECK(cf.ok());
  CHECK(std::abs(s[0] - float(m)) < 1e-3f * m);  // every softmax row sums to 1
  // axpy in place: y += 2·x.
  const std::vector<float> alpha{2.0f};
  Array Y = D.copy();
  vgpu::axpy(floats_on(device, alpha, {}), C, Y);
  std::vector<float> y = read_floats(Y);
  Reference ax = axpy_reference(2.0f, std::vector<float>(c_ref.value.begin(), c_ref.value.end()), d);
  for (auto& bound : ax.bound) bound += 1e-4;  // C itself carries the matmul's rounding
  const Comparison cy = compare(y, ax);
  INFO("axpy: " << cy.describe());
  CHECK(cy.ok());
}

CONTRACT_CASE("arrays: matmul follows np.matmul's shape rules, one device, and the dtypes the ops compute on",
              "[arrays]", every_backend) {
  if (const std::string& why = why_unavailable(backend); !why.empty()) return skip(why);
  vgpu::Device device = open_device(backend);
  struct Case {
    Shape a, b, out;
  };
  const Case cases[] = {
      {{7}, {7}, {}},                           // vector · vector: a 0-d result
      {{5, 7}, {7}, {5}},                       // matrix · vector
      {{7}, {7, 3}, {3}},                       // vector · matrix
      {{9, 13}, {13, 6}, {9, 6}},               // plain
      {{4, 5, 7}, {7, 3}, {4, 5, 3}},           // a stack by one matrix: one launch
      {{5, 7}, {4, 7, 3}, {4, 5, 3}},           // one matrix by a stack
      {{2, 1, 5, 7}, {3, 7, 3}, {2, 3, 5, 3}},  // broadcast batch dimensions
      {{3, 5, 7}, {3, 7, 2}, {3, 5, 2}},        // equal stacks
      {{0, 7}, {7, 3}, {0, 3}},                 // an empty dimension
      {{5, 0}, {0, 3}, {5, 3}},                 // K = 0: zeros
  };
  std::uint64_t seed = 100;
  for (const Case& c : cases) {
    INFO("A " << vgpu::to_string(c.a) << " @ B " << vgpu::to_string(c.b));
    CHECK(vgpu::matmul_shape(c.a, c.b) == c.out);
    const std::vector<float> a = random_floats(vgpu::element_count(c.a), ++seed);
    const std::vector<float> b = random_floats(vgpu::element_count(c.b), ++seed);
    const Array out = vgpu::matmul(floats_on(device, a, c.a), floats_on(device, b, c.b));
    CHECK(out.shape() == c.out);
    const Comparison cmp = compare(read_floats(out), numpy_matmul_reference(a, c.a, b, c.b));
    INFO(cmp.describe());
    CHECK(cmp.ok());
  }
  const Array a = Array::zeros(device, DType::f32, {4, 5}), b = Array::zeros(device, DType::f32, {6, 3});
  REQUIRE_VGPU_ERROR(invalid_argument, "must equal B's", vgpu::matmul(a, b));
  REQUIRE_VGPU_ERROR(
      invalid_argument, "do not broadcast",
      vgpu::matmul(Array::zeros(device, DType::f32, {2, 4, 5}), Array::zeros(device, DType::f32, {3, 5, 2})));
  REQUIRE_VGPU_ERROR(invalid_argument, "0-d", vgpu::matmul(Array::zeros(device, DType::f32, {}), a));
  REQUIRE_VGPU_ERROR(not_supported, "float32",
                     vgpu::matmul(Array::zeros(device, DType::f64, {4, 5}), a.reshape({5, 4})));
  REQUIRE_VGPU_ERROR(not_supported, "i32", vgpu::matmul(a, Array::zeros(device, DType::i32, {5, 2})));
  REQUIRE_VGPU_ERROR(invalid_argument, "out is",
                     vgpu::matmul(a, a.reshape({5, 4}), Array::zeros(device, DType::f32, {5, 5})));
  REQUIRE_VGPU_ERROR(invalid_argument, "shares memory", vgpu::matmul(a, Array::zeros(device, DType::f32, {5, 5}), a));
  REQUIRE_VGPU_ERROR(invalid_argument, "shapes differ", vgpu::add(a, a.reshape({5, 4})));
  if (backend.kind != vgpu::BackendKind::cpu) {
    vgpu::Device cpu = vgpu::Runtime::global().open("cpu:0");
    REQUIRE_VGPU_ERROR(invalid_argument, "never moves data between devices",
                       vgpu::matmul(a, a.reshape({5, 4}).to(cpu)));
    // Moved explicitly, the data arrives.
    const std::vector<float> v = random_floats(20, 7);
    CHECK(read_floats(floats_on(device, v, {4, 5}).to(cpu)) == v);
  }
  CHECK(vgpu::promote_types(DType::f32, DType::i32) == DType::f64);
  CHECK(vgpu::promote_types(DType::f32, DType::u8) == DType::f32);
  CHECK(vgpu::promote_types(DType::f16, DType::i8) == DType::f16);
  CHECK(vgpu::promote_types(DType::i8, DType::i32) == DType::i32);
  CHECK_FALSE(vgpu::promote_types(DType::i8, DType::u8).has_value());  // numpy: int16
}

CONTRACT_CASE("arrays: a stack of products is one launch, broadcast batch dimensions included", "[arrays]",
              every_backend) {
  if (const std::string& why = why_unavailable(backend); !why.empty()) return skip(why);
  vgpu::Device device = open_device(backend);
  struct Case {
    Shape a, b;
    std::uint64_t launches;  // dispatches of one call
  };
  const Case cases[] = {
      {{5, 17, 19}, {5, 19, 23}, 1},                // equal stacks, sizes off every tile and vector width
      {{3, 64, 64}, {3, 64, 64}, 1},                // whole tiles: the vector path at each matrix's offset
      {{17, 19}, {6, 19, 23}, 1},                   // one A against a stack of B
      {{2, 1, 9, 32}, {3, 32, 64}, 1},              // A walks the outer dimension, B the inner one
      {{2, 3, 4, 5}, {2, 3, 5, 6}, 1},              // two batch dimensions both walk: one merged run
      {{2, 1, 3, 1, 4, 5}, {1, 2, 1, 2, 5, 3}, 4},  // four alternating runs: a launch per outer pair
  };
  std::uint64_t seed = 300;
  for (const Case& c : cases) {
    INFO("A " << vgpu::to_string(c.a) << " @ B " << vgpu::to_string(c.b));
    const std::vector<float> a = random_floats(vgpu::element_count(c.a), ++seed);
    const std::vector<float> b = random_floats(vgpu::element_count(c.b), ++seed);
    const Array A = floats_on(device, a, c.a), B = floats_on(device, b, c.b);
    const Shape out_shape = vgpu::matmul_shape(c.a, c.b);
    // Poisoned: every element of the result must be written.
    const Array out = floats_on(device, std::vector<float>(vgpu::element_count(out_shape), kNaN), out_shape);
    vgpu::matmul(A, B, out);  // the first call plans the stack (and may time matmul's variants)
    device.synchronize();
    const vgpu::CounterSnapshot before = device.counters();
    vgpu::matmul(A, B, out);
    device.synchronize();
    const vgpu::CounterSnapshot during = device.counters() - before;
    CHECK(during.dispatches == c.launches);
    CHECK(during.submits == 1);
    CHECK(during.bytes_up == 0);
    const Comparison cmp = compare(read_floats(out), numpy_matmul_reference(a, c.a, b, c.b));
    INFO(cmp.describe());
    CHECK(cmp.ok());
  }
}

CONTRACT_CASE("arrays: memory of the caller's is used in place where the device reaches it, else refused", "[arrays]",
              every_backend) {
  if (const std::string& why = why_unavailable(backend); !why.empty()) return skip(why);
  vgpu::Device device = open_device(backend);
  std::vector<float> a = random_floats(6 * 4, 1), b = random_floats(4 * 5, 2), c(6 * 5, kNaN);
  int released = 0;
  // The CPU's memory is host memory; CUDA registers host memory and maps it into the GPU's
  // address space (kernels reach it over the bus); Vulkan imports it where the driver offers
  // VK_EXT_external_memory_host (the device lists "host_memory_import"); OpenGL refuses it.
  const auto& features = device.info().features;
  const bool reaches_host = backend.kind == vgpu::BackendKind::cpu || backend.kind == vgpu::BackendKind::cuda ||
                            std::find(features.begin(), features.end(), "host_memory_import") != features.end();
  if (!reaches_host) {
    REQUIRE_VGPU_ERROR(not_supported, "cannot use host memory in place",
                       Array::from_external(device, a.data(), DType::f32, {6, 4}, [&] { ++released; }));
    CHECK(released == 0);  // refused: the memory stays the caller's, release never runs
    return;
  }
  {
    const Array A = Array::from_external(device, a.data(), DType::f32, {6, 4}, [&] { ++released; });
    const Array B = Array::from_external(device, b.data(), DType::f32, {4, 5}, [&] { ++released; });
    const Array C = Array::from_external(device, c.data(), DType::f32, {6, 5}, [&] { ++released; });
    CHECK(A.data() == a.data());  // the same address: nothing was copied
    CHECK(A.memory() == vgpu::ArrayMemory::host);
    CHECK(A.external());
    const vgpu::CounterSnapshot before = device.counters();
    vgpu::matmul(A, B, C);
    device.synchronize();
    CHECK((device.counters() - before).bytes_up == 0);
    CHECK((device.counters() - before).bytes_down == 0);
    const Comparison cmp = compare(c, matmul_reference(a, b, 6, 4, 5));  // written into the caller's memory
    INFO(cmp.describe());
    CHECK(cmp.ok());
    a[0] = 1000.0f;  // and the array sees the caller's writes
    std::vector<float> seen(24);
    A.read(seen.data());
    CHECK(seen[0] == 1000.0f);
    // A copy on the device holds the same values in the device's own memory.
    const Array copied = A.copy();
    CHECK(read_floats(copied) == a);
    CHECK(released == 0);
  }
  device.synchronize();  // the buffers over the memory go once the work that used them has run
  CHECK(released == 3);
  if (backend.kind == vgpu::BackendKind::vulkan) {
    // An import spans whole pages around the bytes and binds them at an offset: 4 bytes past a
    // page boundary works where the driver's storage offset alignment allows it (4) and is
    // refused, naming that alignment, where it does not (16 on lavapipe and NVIDIA).
    std::vector<float> page(4096 / 4 + 64, 0.0f);
    float* at = page.data() + ((4096 - reinterpret_cast<std::uintptr_t>(page.data()) % 4096) % 4096) / 4 + 1;
    try {
      const Array X = Array::from_external(device, at, DType::f32, {8}, {});
      const Array Y = X.copy();
      at[3] = 5.0f;
      CHECK(read_floats(X)[3] == 5.0f);
      CHECK(read_floats(Y)[3] == 0.0f);
    } catch (const vgpu::Error& e) {
      CHECK(e.category() == vgpu::ErrorCategory::not_supported);
      CHECK_THAT(e.what(), Catch::Matchers::ContainsSubstring("-byte boundary"));
    }
  }
  REQUIRE_VGPU_ERROR(invalid_argument, "aligned",
                     Array::from_external(device, reinterpret_cast<unsigned char*>(a.data()) + 2, DType::f32, {4}, {}));
  REQUIRE_VGPU_ERROR(invalid_argument, "null", Array::from_external(device, nullptr, DType::f32, {4}, {}));
}

CONTRACT_CASE("arrays: an array outlives its Runtime, and a lost device's arrays say their data is gone",
              "[arrays][device_loss]", every_backend) {
  if (const std::string& why = why_unavailable(backend); !why.empty()) return skip(why);
  const std::vector<float> v = random_floats(50, 9);
  Array kept;
  {
    vgpu::Runtime runtime;
    kept = Array::from_host(runtime.open(backend.name + ":0"), DType::f32, {50}, v.data());
  }
  CHECK(read_floats(kept) == v);  // the device stays open while an array uses it
  vgpu::Device device = kept.device();
  vgpu::testing::force_device_lost(device, vgpu::testing::LossPoint::now);
  REQUIRE_VGPU_ERROR(device_lost, "", read_floats(kept));
  kept.write(v.data());  // written again, it reads again
  CHECK(read_floats(kept) == v);
}

}  // namespace vgpu_test::contract

namespace vgpu_test::contract {

BACKEND_CASE(cpu, "arrays: PersistentKernel calls run on the caller's memory: no copies, and right when memory aliases",
             "[arrays]") {
  if (const std::string& why = why_unavailable(backend); !why.empty()) return skip(why);
  vgpu::Device device = open_device(backend);
  const std::uint32_t m = 9, k = 7, n = 5;
  vgpu::PersistentKernel kernel(device, vgpu::ops::matmul(device, m, k, n));
  CHECK(kernel.buffer_bytes() == 0);  // nothing staged: the calls bring the memory
  const std::vector<float> a = random_floats(m * k, 1), b = random_floats(k * n, 2);
  const Reference want = matmul_reference(a, b, m, k, n);
  auto call = [&](const float* pa, const float* pb, float* pc) {
    kernel({vgpu::TensorArg(pa, {m, k}), vgpu::TensorArg(pb, {k, n}), vgpu::TensorArg(pc, {m, n})});
  };
  const vgpu::CounterSnapshot before = device.counters();
  std::vector<float> c1(m * n, kNaN), c2(m * n, kNaN), c5(m * n, kNaN);
  call(a.data(), b.data(), c1.data());
  call(a.data(), b.data(), c2.data());  // a new output address: bound again
  call(a.data(), b.data(), c1.data());  // the last two bindings are kept: none
  const vgpu::CounterSnapshot d = device.counters() - before;
  CHECK(d.bytes_up == 0);
  CHECK(d.bytes_down == 0);
  CHECK(d.dispatches == 3);
  CHECK(d.binds == 2);
  CHECK(compare(c1, want).ok());
  // A third address set replaces the binding used less recently (c2's), so c2 binds again.
  const vgpu::CounterSnapshot third = device.counters();
  call(a.data(), b.data(), c5.data());
  call(a.data(), b.data(), c1.data());
  call(a.data(), b.data(), c2.data());
  CHECK((device.counters() - third).binds == 2);
  CHECK(compare(c5, want).ok());
  // A loop at the same addresses binds nothing: the last call's binding is reused.
  const vgpu::CounterSnapshot steady = device.counters();
  for (int i = 0; i < 10; ++i) call(a.data(), b.data(), c1.data());
  CHECK((device.counters() - steady).binds == 0);
  CHECK((device.counters() - steady).dispatches == 10);
  CHECK(compare(c2, want).ok());
  // An output that overlaps an input would be read after it was overwritten in place: such a
  // call is staged through the kernel's own buffers, and its result is still right.
  std::vector<float> shared(m * k + m * n, kNaN);
  std::copy(a.begin(), a.end(), shared.begin());
  kernel({vgpu::TensorArg(static_cast<const float*>(shared.data()), {m, k}), vgpu::TensorArg(b.data(), {k, n}),
          vgpu::TensorArg(shared.data() + m * k - 3, {m, n})});  // C starts inside A
  std::vector<float> c3(shared.begin() + m * k - 3, shared.begin() + m * k - 3 + m * n);
  CHECK(compare(c3, want).ok());
  CHECK(kernel.buffer_bytes() == (m * k + k * n + m * n) * 4);  // staging buffers made once needed
  // Memory not aligned to its elements is staged too.
  std::vector<unsigned char> raw((m * k + 1) * 4);
  std::memcpy(raw.data() + 2, a.data(), m * k * 4);
  std::vector<float> c4(m * n, kNaN);
  kernel({vgpu::TensorArg(vgpu::DType::f32, {m, k}, static_cast<const void*>(raw.data() + 2)),
          vgpu::TensorArg(b.data(), {k, n}), vgpu::TensorArg(c4.data(), {m, n})});
  CHECK(compare(c4, want).ok());
}

}  // namespace vgpu_test::contract
