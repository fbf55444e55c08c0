// SPDX-License-Identifier: Apache-2.0
// tests/contract/batch_test.cpp — a Batch is recorded once and resubmitted: each submit runs its
// dispatches in order (each reading what the one before wrote), with each dispatch's own params,
// on the buffers' current data, and compiles, binds and allocates nothing.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <utility>

#include "contract/contract.hpp"
#include "support/numerics.hpp"
#include "support/scale_add_kernel.hpp"

namespace vgpu_test::contract {
namespace {

/// The built-in axpy and add for n elements, planned and compiled on device.
struct AxpyAdd {
  vgpu::KernelPlan axpy, add;
  vgpu::Kernel kaxpy, kadd;
  AxpyAdd(vgpu::Device& device, std::uint32_t n)
      : axpy(vgpu::ops::axpy(device.info(), n)),
        add(vgpu::ops::add(device.info(), n)),
        kaxpy(device.compile(axpy.source, axpy.options)),
        kadd(device.compile(add.source, add.options)) {}

  /// Records y = a·x + y into batch.
  void record_axpy(vgpu::Batch& batch, vgpu::Device& device, const vgpu::Buffer& a, const vgpu::Buffer& x,
                   const vgpu::Buffer& y) const {
    batch.dispatch(kaxpy, device.bind(kaxpy, {{0, a}, {1, x}, {2, y}}), axpy.steps[0].params, axpy.steps[0].groups);
  }
  /// Records out = a + b into batch.
  void record_add(vgpu::Batch& batch, vgpu::Device& device, const vgpu::Buffer& a, const vgpu::Buffer& b,
                  const vgpu::Buffer& out) const {
    batch.dispatch(kadd, device.bind(kadd, {{0, a}, {1, b}, {2, out}}), add.steps[0].params, add.steps[0].groups);
  }
};

/// A buffer to read back after a submit, into values (its size says how many floats).
struct Readback {
  const vgpu::Buffer& buffer;
  std::vector<float>& values;
};

/// Submits batch once (then waits with synchronize() when asked) and reads each readback (NaN
/// first, so an element never written fails); returns what the submit and the reads counted.
vgpu::CounterSnapshot submit_and_read(vgpu::Device& device, const vgpu::Batch& batch,
                                      std::initializer_list<Readback> readbacks, bool synchronize = false) {
  const vgpu::CounterSnapshot before = device.counters();
  device.submit(batch);
  if (synchronize) device.synchronize();
  for (const Readback& r : readbacks) {
    std::fill(r.values.begin(), r.values.end(), kNaN);
    device.read(r.buffer, r.values.data(), r.values.size() * 4);
  }
  return device.counters() - before;
}

}  // namespace

CONTRACT_CASE("batch: three dependent built-in dispatches recorded once, resubmitted with new data", "[batch]",
              every_backend) {
  vgpu::Device device = open_device(backend);
  constexpr std::uint32_t n = 1000;
  const AxpyAdd builtins(device, n);
  vgpu::Buffer a1 = device.create_buffer(4), a2 = device.create_buffer(4);
  vgpu::Buffer x = device.create_buffer(n * 4), y = device.create_buffer(n * 4), z = device.create_buffer(n * 4),
               o = device.create_buffer(n * 4);
  // y = a1*x + y;  z = a2*y + z (reads the new y);  o = y + z (reads both).
  vgpu::Batch batch = device.create_batch();
  builtins.record_axpy(batch, device, a1, x, y);
  builtins.record_axpy(batch, device, a2, y, z);
  builtins.record_add(batch, device, y, z, o);
  REQUIRE(batch.size() == 3);

  struct Inputs {
    float a1, a2;
    std::vector<float> x, y, z;
  };
  // Submits the batch once and checks y, z, o against in (the values the batch starts from).
  auto submit_and_check = [&](const Inputs& in, const char* what) {
    INFO(what);
    std::vector<float> gy(n), gz(n), go(n);
    const vgpu::CounterSnapshot d = submit_and_read(device, batch, {{y, gy}, {z, gz}, {o, go}});
    INFO(d.to_string());
    CHECK(d.submits == 1);
    CHECK(d.dispatches == 3);
    CHECK(d.compiles + d.binds + d.allocations == 0);
    // Error bounds: each axpy adds ≤ 2 eps of its operands, and the earlier error carries
    // through (scaled by a2 for z); the add adds ≤ 2 eps of its result.
    Reference ry, rz, ro;
    for (std::uint32_t i = 0; i < n; ++i) {
      const double yv = static_cast<double>(in.a1) * in.x[i] + in.y[i];
      const double by = 2 * kEps32 * (std::abs(static_cast<double>(in.a1) * in.x[i]) + std::abs(in.y[i]));
      const double zv = static_cast<double>(in.a2) * yv + in.z[i];
      const double bz = 2 * kEps32 * (std::abs(in.a2 * yv) + std::abs(in.z[i])) + std::abs(in.a2) * by;
      ry.value.push_back(yv), ry.bound.push_back(2 * by);
      rz.value.push_back(zv), rz.bound.push_back(2 * bz);
      ro.value.push_back(yv + zv), ro.bound.push_back(2 * (by + bz + 2 * kEps32 * std::abs(yv + zv)));
    }
    const Comparison cy = compare(gy, ry), cz = compare(gz, rz), co = compare(go, ro);
    INFO("y: " << cy.describe() << "\nz: " << cz.describe() << "\no: " << co.describe());
    CHECK(cy.ok());
    CHECK(cz.ok());
    CHECK(co.ok());
    return std::make_pair(gy, gz);
  };
  auto upload = [&](const Inputs& in) {
    device.write(a1, &in.a1, 4);
    device.write(a2, &in.a2, 4);
    device.write(x, in.x.data(), n * 4);
    device.write(y, in.y.data(), n * 4);
    device.write(z, in.z.data(), n * 4);
  };

  const Inputs first{0.5f, -2.0f, random_floats(n, 21), random_floats(n, 22), random_floats(n, 23)};
  upload(first);
  submit_and_check(first, "first submit");

  const Inputs second{3.0f, 0.25f, random_floats(n, 31), random_floats(n, 32), random_floats(n, 33)};
  upload(second);
  const auto [y2, z2] = submit_and_check(second, "second submit with new data");

  // Without new data the batch runs again on its own results: y and z accumulate.
  const Inputs third{second.a1, second.a2, second.x, y2, z2};
  submit_and_check(third, "third submit on the batch's own results");
}

CONTRACT_CASE("batch: dependent dispatches of one user kernel with different params, recorded once, resubmitted",
              "[batch][user]", every_backend) {
  vgpu::Device device = open_device(backend);
  constexpr std::uint32_t n = 1000;
  const vgpu::Kernel k =
      device.compile(scale_add_source(backend.kind, scale_add_text(backend.kind)), scale_add_options());
  vgpu::Buffer x = device.create_buffer(n * 4), y = device.create_buffer(n * 4), z = device.create_buffer(n * 4);
  // y = 2x + x = 3x; z = -0.5y + x = -0.5x; y2 = 4z + y = x — each step reads the one before,
  // and each has its own params (one params block per dispatch of the same kernel).
  vgpu::Batch batch = device.create_batch();
  const auto groups = spread((n + 63) / 64);
  batch.dispatch(k, device.bind(k, {{0, x}, {1, x}, {2, y}}), vgpu::ParamsBlock::of(ScaleAddParams{n, 2.0f, 0, 0}),
                 groups);
  batch.dispatch(k, device.bind(k, {{0, y}, {1, x}, {2, z}}), vgpu::ParamsBlock::of(ScaleAddParams{n, -0.5f, 0, 0}),
                 groups);
  vgpu::Buffer y2 = device.create_buffer(n * 4);
  batch.dispatch(k, device.bind(k, {{0, z}, {1, y}, {2, y2}}), vgpu::ParamsBlock::of(ScaleAddParams{n, 4.0f, 0, 0}),
                 groups);
  for (int round = 0; round < 3; ++round) {
    INFO("submit " << round);
    std::vector<float> xs(n);
    for (std::uint32_t i = 0; i < n; ++i) xs[i] = static_cast<float>((i * (round + 3)) % 101) - 50.0f;  // exact
    device.write(x, xs.data(), n * 4);
    std::vector<float> gy(n), gz(n), gy2(n);
    const vgpu::CounterSnapshot d = submit_and_read(device, batch, {{y, gy}, {z, gz}, {y2, gy2}}, true);
    INFO(d.to_string());
    CHECK(d.submits == 1);
    CHECK(d.dispatches == 3);
    CHECK(d.compiles + d.binds + d.allocations == 0);
    std::size_t bad = 0;
    for (std::uint32_t i = 0; i < n; ++i) bad += gy[i] != 3 * xs[i] || gz[i] != -0.5f * xs[i] || gy2[i] != xs[i];
    CHECK(bad == 0);
  }
}

CONTRACT_CASE("batch: two dependent launches recorded once, resubmitted five times with new data", "[batch]",
              every_backend) {
  vgpu::Device device = open_device(backend);
  constexpr std::uint32_t n = 1000;
  const AxpyAdd builtins(device, n);
  vgpu::Buffer a = device.create_buffer(4), x = device.create_buffer(n * 4), y = device.create_buffer(n * 4),
               o = device.create_buffer(n * 4);
  // y = a*x + y;  o = y + x (reads the new y). On CUDA, resubmits replay one captured graph.
  vgpu::Batch batch = device.create_batch();
  builtins.record_axpy(batch, device, a, x, y);
  builtins.record_add(batch, device, y, x, o);
  for (std::uint64_t round = 0; round < 5; ++round) {
    INFO("submit " << round);
    const float av = 0.5f + static_cast<float>(round);
    const auto xv = random_floats(n, 40 + round), yv = random_floats(n, 50 + round);
    device.write(a, &av, 4);
    device.write(x, xv.data(), n * 4);
    device.write(y, yv.data(), n * 4);
    std::vector<float> go(n);
    const vgpu::CounterSnapshot d = submit_and_read(device, batch, {{o, go}});
    INFO(d.to_string());
    CHECK(d.dispatches == 2);
    CHECK(d.compiles + d.binds + d.allocations == 0);
    Reference ro;
    for (std::uint32_t i = 0; i < n; ++i) {
      const double yn = static_cast<double>(av) * xv[i] + yv[i];
      ro.value.push_back(yn + xv[i]);
      ro.bound.push_back(4 * kEps32 * (std::abs(static_cast<double>(av) * xv[i]) + std::abs(yv[i]) + std::abs(xv[i])));
    }
    const Comparison c = compare(go, ro);
    INFO(c.describe());
    CHECK(c.ok());
  }
}

}  // namespace vgpu_test::contract
