// SPDX-License-Identifier: Apache-2.0
// tests/backends/cuda_test.cpp — what only the CUDA backend does, beyond the backend contract
// (tests/contract/, which runs the user-kernel, compile-error, L2, steady-state, batch, thread and
// device-info themes on CUDA too): the built-ins' embedded fatbins (L3), every matmul tiling the
// backend picks by shape and SM count, and round trips copied by kernel, by memcpy and with or
// without CUDA graphs. Part of vgpu-test-backends; needs a CUDA device (NVRTC alone:
// cuda_nvrtc_test.cpp).
#include <array>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "contract/contract.hpp"
#include "support/cache_fixtures.hpp"
#include "support/expect_error.hpp"
#include "support/numerics.hpp"
#include "support/plan_runner.hpp"
#include "support/scoped_env.hpp"
#include "vgpu/cache/precompiled.hpp"

#ifndef VGPU_TEST_EXPECT_CUDA_FATBIN
#error "VGPU_TEST_EXPECT_CUDA_FATBIN (whether the build embedded CUDA fatbins) must be defined by the build"
#endif

namespace vgpu_test::contract {

BACKEND_CASE(cuda, "L3: every built-in op loads from the embedded fatbin, with no NVRTC compile", "[l3]") {
#if VGPU_TEST_EXPECT_CUDA_FATBIN
  {
    // The measured choice (VGPU_TUNE=measure) compiles every candidate of a large product on a
    // fresh device: each must come from the fatbin too, with no NVRTC compile.
    vgpu::Runtime measuring(vgpu::test::only(vgpu::BackendKind::cuda));
    vgpu::Device device = measuring.open("cuda:0");
    const vgpu::KernelPlan p = vgpu::ops::matmul(device, 2048, 2048, 2048);
    device.compile(p.source, p.options);
    CHECK(device.counters().source_compiles == 0);
    CHECK(device.counters().l3_hits >= 1);
  }
  // The rules' picks below: a measurement would put the candidates in L1 before each compile.
  ScopedEnv rules("VGPU_TUNE", "rules");
  vgpu::Runtime fresh(vgpu::test::only(vgpu::BackendKind::cuda));  // an empty L1
  vgpu::Device device = fresh.open("cuda:0");
  const vgpu::DeviceInfo& info = device.info();
  // Shapes that take each matmul tiling on this GPU, and every other built-in.
  const std::uint32_t sms = info.compute_units;
  std::vector<vgpu::KernelPlan> plans = {vgpu::ops::matmul(info, 16, 16, 16),
                                         vgpu::ops::matmul(info, 128 * sms, 8, 128),
                                         vgpu::ops::matmul(info, 128 * ((sms + 1) / 2), 8, 128),
                                         vgpu::ops::axpy(info, 1000),
                                         vgpu::ops::add(info, 1000),
                                         vgpu::ops::mul(info, 1000),
                                         vgpu::ops::reduce_sum(info, 100000),
                                         vgpu::ops::softmax_rows(info, 3, 7)};
  std::set<std::string> tilings;
  for (const auto& p : plans)
    if (p.source.name == "vgpu.matmul")
      tilings.insert(p.options.defines.at("VGPU_MM_BM") + "x" + p.options.defines.at("VGPU_MM_BN"));
  CHECK(tilings.size() == 3);
  for (const auto& p : plans) {
    INFO(p.source.name);
    const vgpu::CounterSnapshot before = device.counters();
    device.compile(p.source, p.options);
    const vgpu::CounterSnapshot after = device.counters();
    CHECK(after.l3_hits == before.l3_hits + 1);
    CHECK(after.source_compiles == before.source_compiles);
  }
#else
  CHECK(vgpu::cache::precompiled_cuda_count() == 0);
  skip("built without nvcc: no CUDA fatbins; built-ins compile with NVRTC (checked by cuda.nvrtc_builtins)");
#endif
}

BACKEND_CASE(cuda,
             "a complete .cu text with several extern \"C\" kernels runs the entry asked for, specialised by name",
             "[user][spec]") {
  vgpu::Device device = open_device(backend);
  // Both entries index v the same way; each does its own statement where its condition holds.
  const auto kernel = [](const std::string& name, const std::string& condition, const std::string& statement) {
    return "extern \"C\" __global__ void " + name + "(float* v, unsigned n) {\n" +
           "  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (" + condition + ") " + statement +
           ";\n}\n";
  };
  const std::string text = kernel("vgpu_test_fill", "i < n", "v[i] = FILL_VALUE") +
                           kernel("vgpu_test_scale", "i < n && USE_SCALE", "v[i] *= SCALE");
  auto source = [&](const char* entry) {
    vgpu::KernelSource s;
    s.name = std::string("test.cuda_two_entries.") + entry;
    s.add_cuda(text, entry);
    s.bindings = {{0, vgpu::Access::read_write, "v", {}}};
    s.params_size = 4;
    return s;
  };
  vgpu::CompileOptions o;
  o.workgroup_size = {64, 1, 1};
  o.specialize("FILL_VALUE", 1.5f).specialize("SCALE", -2.0f).specialize("USE_SCALE", true);
  const vgpu::Kernel fill = device.compile(source("vgpu_test_fill"), o);
  const vgpu::Kernel scale = device.compile(source("vgpu_test_scale"), o);
  const std::uint32_t n = 1000;
  vgpu::Buffer b = device.create_buffer(n * 4);
  const vgpu::BindingSet set = device.bind(fill, {{0, b}});
  const vgpu::Groups groups{(n + 63) / 64};
  device.dispatch(fill, set, vgpu::ParamsBlock::of(n), groups);
  device.dispatch(scale, device.bind(scale, {{0, b}}), vgpu::ParamsBlock::of(n), groups);
  std::vector<float> out(n);
  device.read(b, out.data(), n * 4);
  for (float v : out) REQUIRE(v == -3.0f);
  vgpu::CompileOptions by_id = o;
  by_id.specialize(0u, 1u);
  REQUIRE_VGPU_ERROR(not_supported, "CUDA C has no constant ids", device.compile(source("vgpu_test_fill"), by_id));
}

BACKEND_CASE(cuda, "a module's vgpu_dynamic_shared_bytes gives every launch that much dynamic shared memory",
             "[user][shared]") {
  vgpu::Device device = open_device(backend);
  // 96 KB: past the 48 KB a launch gets without the opt-in. Each block fills all of it, then
  // reads it back reversed: a smaller allocation faults or reads garbage.
  auto source = [](std::uint32_t bytes, const char* name) {
    vgpu::KernelSource s;
    s.name = name;
    s.add_cuda("extern \"C\" { __constant__ unsigned vgpu_dynamic_shared_bytes = " + std::to_string(bytes) +
                   "; }\n"
                   "extern \"C\" __global__ void fill_reverse(unsigned* out) {\n"
                   "  extern __shared__ unsigned words[];\n"
                   "  const unsigned n = vgpu_dynamic_shared_bytes / 4;\n"
                   "  for (unsigned i = threadIdx.x; i < n; i += blockDim.x) words[i] = i * 3u + blockIdx.x;\n"
                   "  __syncthreads();\n"
                   "  for (unsigned i = threadIdx.x; i < n; i += blockDim.x)\n"
                   "    out[blockIdx.x * n + i] = words[n - 1 - i];\n"
                   "}\n",
               "fill_reverse");
    s.bindings = {{0, vgpu::Access::write, "out", {}}};
    return s;
  };
  constexpr std::uint32_t kBytes = 96 * 1024, kWords = kBytes / 4, kBlocks = 3;
  vgpu::CompileOptions o;
  o.workgroup_size = {256, 1, 1};
  const vgpu::Kernel k = device.compile(source(kBytes, "test.cuda_dynamic_shared"), o);
  vgpu::Buffer b = device.create_buffer(std::uint64_t{kWords} * kBlocks * 4);
  device.dispatch(k, device.bind(k, {{0, b}}), vgpu::ParamsBlock{}, vgpu::Groups{kBlocks});
  std::vector<std::uint32_t> out(std::size_t{kWords} * kBlocks);
  device.read(b, out.data(), out.size() * 4);
  std::size_t wrong = 0;
  for (std::uint32_t blk = 0; blk < kBlocks; ++blk)
    for (std::uint32_t i = 0; i < kWords; ++i)
      wrong += out[std::size_t{blk} * kWords + i] != (kWords - 1 - i) * 3u + blk;
  CHECK(wrong == 0);
  // More than a block may have: refused at compile with the device's limit and a Fix.
  REQUIRE_VGPU_ERROR(not_supported, "dynamic shared memory",
                     device.compile(source(16u << 20, "test.cuda_dynamic_shared_too_much"), o));
  // The device keeps working.
  device.dispatch(k, device.bind(k, {{0, b}}), vgpu::ParamsBlock{}, vgpu::Groups{1});
  device.synchronize();
}

BACKEND_CASE(cuda, "matmul: every CUDA tiling is right at awkward and tile-sized shapes, on both paths", "[matmul]") {
  vgpu::Device device = open_device(backend);
  const std::array<std::uint32_t, 5> tilings[] = {{128, 128, 8, 8, 8}, {128, 64, 8, 8, 4}, {64, 64, 16, 4, 4}};
  const char* names[] = {"VGPU_MM_BM", "VGPU_MM_BN", "VGPU_MM_BK", "VGPU_MM_TM", "VGPU_MM_TN"};
  struct Shape {
    std::uint32_t m, k, n;
  };
  // 1×1×1; K not a multiple of BK and N not of 4 (checked path everywhere); exact tiles
  // (fast path everywhere); interiors on the fast path with ragged edges.
  const Shape shapes[] = {{1, 1, 1}, {67, 33, 129}, {128, 16, 128}, {256, 64, 384}, {300, 257, 200}, {515, 96, 260}};
  std::uint64_t seed = 100;
  for (const auto& t : tilings)
    for (const Shape& s : shapes)
      for (Path path : {Path::raw, Path::persistent}) {
        vgpu::KernelPlan plan = vgpu::ops::matmul(device.info(), s.m, s.k, s.n);
        for (int i = 0; i < 5; ++i) plan.options.defines[names[i]] = std::to_string(t[i]);
        plan.options.workgroup_size = {t[1] / t[4], t[0] / t[3], 1};
        plan.steps[0].groups = vgpu::Groups{(s.n + t[1] - 1) / t[1], (s.m + t[0] - 1) / t[0], 1};
        INFO("tiling " << t[0] << "x" << t[1] << ", " << s.m << "x" << s.k << "x" << s.n << " via " << to_string(path));
        HostTensors args{random_floats(std::size_t(s.m) * s.k, ++seed), random_floats(std::size_t(s.k) * s.n, ++seed),
                         std::vector<float>(std::size_t(s.m) * s.n)};
        const Reference ref = matmul_reference(args[0], args[1], s.m, s.k, s.n);
        run_plan(device, plan, args, path);
        const Comparison c = compare(args[2], ref);
        INFO(c.describe());
        CHECK(c.ok());
      }
}

BACKEND_CASE(cuda, "round trip: repeated calls with new data (direct, captured, replayed) are each right", "[graph]") {
  // Copies by kernel on mapped staging (small trips), by memcpy (over 64 KiB, or zero copy
  // off), and without graphs: every way must give the same right answers.
  const char* mode = GENERATE("default", "VGPU_CUDA_ZERO_COPY=0", "VGPU_CUDA_GRAPHS=0");
  INFO("mode " << mode);
  std::optional<ScopedEnv> env;
  if (std::string(mode) != "default") {
    const std::string m(mode);
    env.emplace(m.substr(0, m.find('=')), m.substr(m.find('=') + 1));
  }
  vgpu::Runtime runtime(vgpu::test::only(vgpu::BackendKind::cuda));  // reads the environment when opening
  vgpu::Device device = runtime.open("cuda:0");
  for (const auto& [m, k, n] : {std::array<std::uint32_t, 3>{16, 16, 16}, std::array<std::uint32_t, 3>{70, 300, 33}}) {
    vgpu::PersistentKernel kernel(device, vgpu::ops::matmul(device.info(), m, k, n));
    for (std::uint64_t call_no = 0; call_no < 6; ++call_no) {
      INFO(m << "x" << k << "x" << n << ", call " << call_no);
      HostTensors args{random_floats(std::size_t(m) * k, 500 + call_no),
                       random_floats(std::size_t(k) * n, 600 + call_no), std::vector<float>(std::size_t(m) * n, kNaN)};
      const Reference ref = matmul_reference(args[0], args[1], m, k, n);
      call(kernel, args);
      const Comparison c = compare(args[2], ref);
      INFO(c.describe());
      CHECK(c.ok());
    }
  }
  // The axpy output is also an input: a replayed trip must upload the new y every time.
  vgpu::PersistentKernel axpy(device, vgpu::ops::axpy(device.info(), 1000));
  for (std::uint64_t call_no = 0; call_no < 5; ++call_no) {
    INFO("axpy call " << call_no);
    HostTensors args{{0.5f + float(call_no)}, random_floats(1000, 700 + call_no), random_floats(1000, 800 + call_no)};
    const Reference ref = axpy_reference(args[0][0], args[1], args[2]);
    call(axpy, args);
    const Comparison c = compare(args[2], ref);
    INFO(c.describe());
    CHECK(c.ok());
  }
}

}  // namespace vgpu_test::contract
