// SPDX-License-Identifier: Apache-2.0
// tests/backends/opengl_test.cpp — what only the OpenGL backend does, beyond the backend contract
// (tests/contract/, which runs the user-kernel, compile-error, L2, steady-state, batch, thread and
// device-info themes on OpenGL too): it refuses GLSL specialization constants itself (a driver
// must never see them), and without program binary formats (Mesa with its shader cache off) it
// keeps nothing in L2 and still computes right; its fused round trip (staged writes + batch as one
// queued task, reads as one waited-for task) agrees with the host at awkward sizes. Part of
// vgpu-test-backends (llvmpipe in CI).
#include <string>
#include <vector>

#include "contract/contract.hpp"
#include "support/cache_fixtures.hpp"
#include "support/expect_error.hpp"
#include "support/scale_add_kernel.hpp"

namespace vgpu_test::contract {
namespace {

using vgpu::test::entries;

/// The scale-add kernel for OpenGL with glsl as its body (tests vary the body).
vgpu::KernelSource make_source(const std::string& glsl) { return scale_add_source(vgpu::BackendKind::opengl, glsl); }

}  // namespace

BACKEND_CASE(opengl, "specialization constants in GLSL are refused with compile_error before the driver sees them",
             "[user][errors][spec]") {
  // layout(constant_id = N) belongs to SPIR-V targets. Mesa refuses it; NVIDIA's GLSL compiler
  // (driver 580) died with SIGSEGV inside glCompileShader on any shader declaring one, taking the
  // process down. vgpu refuses them itself, on every driver. K is 1, so an accepted kernel would
  // compute the plain scale-add.
  vgpu::Device device = open_device(backend);
  const std::string head =
      "VGPU_PARAMS { uint n; float scale; uint pad0; uint pad1; } p;\n"
      "layout(std430, binding = 0) readonly buffer BufA { float a[]; };\n"
      "layout(std430, binding = 1) readonly buffer BufB { float b[]; };\n"
      "layout(std430, binding = 2) writeonly buffer BufOut { float result[]; };\n";
  const std::string body =
      "void main() {\n"
      "  const uint i = VGPU_LINEAR_GROUP * gl_WorkGroupSize.x + gl_LocalInvocationID.x;\n"
      "  if (i < p.n) result[i] = a[i] * p.scale * float(K) + b[i];\n"
      "}\n";
  const std::vector<std::string> declarations = {
      "layout(constant_id = 0) const uint K = 1u;\n",
      "layout(constant_id = 1) const int K = 1;\n",
      "layout(constant_id = 2) const bool B = true;\n#define K (B ? 1.0 : 0.0)\n",
      "layout(constant_id = 7) const float K = 1.0;\n",
      "layout(constant_id = 3) const uint S = 64u;\nshared float tile[S];\n#define K (tile.length() == 64 ? 1u : 0u)\n",
      "layout(constant_id = 0) const uint K = 1u;\nlayout(constant_id = 1) const uint L = 2u;\n"
      "layout(constant_id = 2) const uint M = 3u;\nlayout(constant_id = 9) const float F = 0.5;\n",
      "#define SPEC(n) layout(constant_id = n)\nSPEC(4) const uint K = 1u;\n",
      "layout(local_size_x_id = 0) in;\nconst uint K = 1u;\n",
  };
  for (std::size_t v = 0; v < declarations.size(); ++v) {
    INFO("variant " << v << ":\n" << declarations[v]);
    vgpu::KernelSource source = make_source(head + declarations[v] + body);
    source.name = "test.gl_spec_constant_" + std::to_string(v);
    for (int attempt = 0; attempt < 2; ++attempt) {
      const auto err = catch_error([&] { (void)device.compile(source, scale_add_options()); });
      REQUIRE(err.has_value());
      INFO(err->what());
      CHECK(err->category() == vgpu::ErrorCategory::compile_error);
      CHECK_THAT(err->problem(), Catch::Matchers::ContainsSubstring("specialization constants exist only for SPIR-V"));
      CHECK_THAT(err->problem(), Catch::Matchers::ContainsSubstring("line "));
      CHECK_THAT(err->fix(), Catch::Matchers::ContainsSubstring("CompileOptions::defines"));
    }
  }
  // A define's value is checked too.
  vgpu::CompileOptions pasted = scale_add_options();
  pasted.defines["SPEC"] = "layout(constant_id = 5)";
  REQUIRE_VGPU_ERROR(compile_error, "define SPEC",
                     device.compile(make_source(head + "SPEC const uint K = 1u;\n" + body), pasted));
  // The words in comments are not constructs: this kernel compiles and runs right.
  const vgpu::KernelSource commented = make_source(
      "// Vulkan would take layout(constant_id = 0) here.\n/* local_size_x_id\n too */\nconst uint K = 1u;\n" + head +
      body);
  check_scale_add(device, device.compile(commented, scale_add_options()), 1000, 64);
  // The device keeps working after all of that.
  check_scale_add(device, device.compile(make_source(kScaleAddGlsl), scale_add_options()), 1000, 64);
}

BACKEND_CASE(opengl, "L2 without binary formats (MESA_SHADER_CACHE_DISABLE=true): no store, no load, right results",
             "[l2][processes]") {
  if (open_device(backend).info().vendor.find("Mesa") == std::string::npos)
    return skip("MESA_SHADER_CACHE_DISABLE only affects Mesa drivers");
  TempDir tmp("gl-");
  vgpu::test::ChildOptions options;
  options.mesa_cache = tmp.path / "mesa";
  options.no_mesa_cache = true;
  for (int run = 0; run < 2; ++run) {
    const ChildRun r = vgpu::test::run_scale_add_child(vgpu::BackendKind::opengl, tmp.path / "cache", options);
    INFO("run " << run << ":\n" << r.output);
    REQUIRE(r.ok());
    CHECK(r.count("program_binary") == 0);
    CHECK(r.count("source_compiles") == 1);
    CHECK(r.count("l2_hits") + r.count("l2_misses") + r.count("l2_writes") + r.count("l2_rejected") == 0);
    CHECK(r.count("store_hits") + r.count("store_misses") + r.count("store_writes") == 0);
  }
  CHECK(entries(tmp.path / "cache", EntryKind::gl_program_binary, true).empty());
}

}  // namespace vgpu_test::contract

namespace vgpu_test::contract {

BACKEND_CASE(opengl,
             "a round trip is one worker task pair: staged writes at offsets, the batch and several reads, "
             "right at 1, 17, 1000, 4097 elements and past the staging limit",
             "[round_trip]") {
  // GlDevice::round_trip stages writes up to 64 KiB and queues them with the batch, then reads in
  // one waited-for task; larger writes and trips without reads take the separate calls. Every
  // path must give what out = a * b computes on the host, with the outputs poisoned first.
  vgpu::Device device = open_device(backend);
  for (const std::uint64_t n : {std::uint64_t{1}, std::uint64_t{17}, std::uint64_t{1000}, std::uint64_t{4097},
                                std::uint64_t{8192}, std::uint64_t{8193}, std::uint64_t{(1u << 20) / 4 + 3}}) {
    // 8192: two 32 KiB writes, exactly the staging limit; 8193 and up: the separate calls.
    INFO("n = " << n);
    vgpu::KernelPlan plan = vgpu::ops::mul(device.info(), n);
    vgpu::Kernel kernel = device.compile(plan.source, plan.options);
    // a's buffer holds a guard word before the data, so the write lands at an offset.
    vgpu::Buffer a = device.create_buffer((n + 1) * 4), b = device.create_buffer(n * 4),
                 out = device.create_buffer(n * 4);
    vgpu::Buffer a_view = device.create_buffer(n * 4);  // what the kernel reads (copied below)
    vgpu::BindingSet set = device.bind(kernel, {{0, a_view}, {1, b}, {2, out}});
    vgpu::Batch batch = device.create_batch();
    batch.dispatch(kernel, set, plan.steps.at(0).params, plan.steps.at(0).groups);
    for (int round = 0; round < 3; ++round) {
      INFO("round " << round);
      std::vector<float> x(n), y(n), want(n), got(n, -1234.5f), head(2, -1.0f), guard = {7.0f};
      for (std::uint64_t i = 0; i < n; ++i) {
        x[i] = float((i * 7 + round) % 23) - 11.0f;
        y[i] = float((i * 3 + 5 * round) % 19) * 0.5f;
        want[i] = x[i] * y[i];
      }
      device.write(a, guard.data(), 4);
      device.write(a_view, x.data(), n * 4);
      // Writes at an offset (a past its guard word) and whole (b), the batch, two reads: the
      // output in two parts (the second at an offset) and a's guard + first element.
      const vgpu::HostWrite writes[] = {{a, x.data(), n * 4, 4}, {b, y.data(), n * 4, 0}};
      const std::uint64_t first = n / 2;
      const vgpu::HostRead reads[] = {{out, got.data(), first * 4, 0},
                                      {out, got.data() + first, (n - first) * 4, first * 4},
                                      {a, head.data(), 8, 0}};
      device.round_trip(writes, batch, reads);
      CHECK(head[0] == 7.0f);
      CHECK(head[1] == x[0]);
      std::uint64_t wrong = 0;
      for (std::uint64_t i = 0; i < n; ++i) wrong += got[i] != want[i];
      CHECK(wrong == 0);
      // Without reads (the separate calls), then reads only: the same result.
      std::vector<float> again(n, -1.0f);
      const vgpu::HostRead read_all[] = {{out, again.data(), n * 4, 0}};
      device.round_trip(writes, batch, {});
      device.round_trip({}, device.create_batch(), read_all);
      CHECK(again == want);
    }
  }
}

}  // namespace vgpu_test::contract

namespace vgpu_test::contract {

BACKEND_CASE(opengl,
             "a batch that repeats one dispatch reuses its params slot, and one that alternates kernels and "
             "params does not mix them up",
             "[batch][params]") {
  // replay_w skips the params upload when a dispatch's block equals the last one uploaded. A
  // batch of k identical axpy dispatches must add k·a·x; one alternating two sizes (different
  // params) must give each its own n (the shorter one leaves the tail of its y alone).
  vgpu::Device device = open_device(backend);
  for (const std::uint64_t n : {std::uint64_t{1}, std::uint64_t{17}, std::uint64_t{1000}, std::uint64_t{4097}}) {
    INFO("n = " << n);
    const std::uint64_t short_n = n > 1 ? n - 1 : 1;
    vgpu::KernelPlan plan = vgpu::ops::axpy(device.info(), n), plan_short = vgpu::ops::axpy(device.info(), short_n);
    vgpu::Kernel kernel = device.compile(plan.source, plan.options);
    vgpu::Kernel kernel_short = device.compile(plan_short.source, plan_short.options);
    const float alpha = 2.0f;
    std::vector<float> x(n), y0(n);
    for (std::uint64_t i = 0; i < n; ++i) {
      x[i] = float(i % 13);
      y0[i] = float(i % 7);
    }
    vgpu::Buffer ba = device.create_buffer(4), bx = device.create_buffer(n * 4), by = device.create_buffer(n * 4),
                 bz = device.create_buffer(n * 4);
    device.write(ba, &alpha, 4);
    device.write(bx, x.data(), n * 4);
    vgpu::BindingSet set_y = device.bind(kernel, {{0, ba}, {1, bx}, {2, by}});
    vgpu::BindingSet set_z = device.bind(kernel_short, {{0, ba}, {1, bx}, {2, bz}});
    const auto& s = plan.steps.at(0);
    const auto& ss = plan_short.steps.at(0);
    vgpu::Batch repeat = device.create_batch(), mixed = device.create_batch();
    for (int i = 0; i < 5; ++i) repeat.dispatch(kernel, set_y, s.params, s.groups);
    for (int i = 0; i < 3; ++i) {
      mixed.dispatch(kernel, set_y, s.params, s.groups);
      mixed.dispatch(kernel_short, set_z, ss.params, ss.groups);
    }
    device.write(by, y0.data(), n * 4);
    device.write(bz, y0.data(), n * 4);
    device.submit(repeat);
    device.submit(mixed);
    std::vector<float> y(n), z(n);
    device.read(by, y.data(), n * 4);
    device.read(bz, z.data(), n * 4);
    std::uint64_t wrong_y = 0, wrong_z = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      wrong_y += y[i] != y0[i] + 8 * alpha * x[i];                          // 5 + 3 dispatches on y
      wrong_z += z[i] != (i < short_n ? y0[i] + 3 * alpha * x[i] : y0[i]);  // 3 on z's first short_n
    }
    CHECK(wrong_y == 0);
    CHECK(wrong_z == 0);
  }
}

}  // namespace vgpu_test::contract
