// SPDX-License-Identifier: Apache-2.0
// tests/conformance/matmul_test.cpp — matmul on every device under test, through both the
// PersistentKernel and the raw Device path, against a double-precision reference.
// Tolerance (derived in support/numerics.hpp): |err_ij| ≤ 2·K·eps32·Σ_k |a_ik||b_kj|.
#include "support/catch.hpp"

#include <array>
#include <span>

#include "conformance/conformance.hpp"
#include "conformance/junit_report.hpp"
#include "support/numerics.hpp"
#include "support/plan_runner.hpp"
#include "support/tuned_plan.hpp"
#include "vgpu/feature_check.hpp"
#include "vgpu/kernels/coopmat_tuning.hpp"
#include "vgpu/kernels/gpu_tuning.hpp"
#if VGPU_CONFORMANCE_CUDA_TILINGS
#include "cuda_op_tuner.hpp"  // the CUDA backend's own header (tests/CMakeLists.txt adds its directory)
#endif

namespace vgpu_test {
namespace {

struct MatmulShape {
  std::uint32_t m, k, n;
};

// Runs one M×K·K×N product on device through path and checks every element of C; tiling: the
// GLSL (Vulkan/OpenGL) or CUDA variant forced as VGPU_MATMUL_TILING would, empty: the tuner's.
void check_matmul(vgpu::Device& device, MatmulShape s, Path path, const std::string& tiling = {}) {
  INFO(device.info().id() << " matmul " << s.m << "x" << s.k << " · " << s.k << "x" << s.n << " via " << to_string(path)
                          << (tiling.empty() ? "" : " tiling " + tiling));
  const vgpu::DeviceInfo& info = device.info();
  std::shared_ptr<const vgpu::OpTuner> forced;
  if (!tiling.empty()) {
#if VGPU_CONFORMANCE_CUDA_TILINGS
    if (info.backend == vgpu::BackendKind::cuda)
      forced = vgpu::cuda::cuda_op_tuner(tiling);
    else
#endif
      forced = vgpu::kernels::gpu_builtin_tuner(tiling);
  }
  // The rule's plan (nothing measured), or the forced tiling's.
  auto plan = [&] {
    return forced ? matmul_with(forced, info, s.m, s.k, s.n) : vgpu::ops::matmul(info, s.m, s.k, s.n);
  };
  const auto a = random_floats(std::size_t{s.m} * s.k, std::size_t{s.m} * s.k);
  const auto b = random_floats(std::size_t{s.k} * s.n, std::size_t{s.k} * s.n + 1);
  const Reference ref = matmul_reference(a, b, s.m, s.k, s.n);
  HostTensors args{a, b, std::vector<float>(std::size_t{s.m} * s.n, kNaN)};
  if (path == Path::persistent) {
    // The product path, spelled out as users write it.
    vgpu::PersistentKernel kernel(device, plan());
    run_persistent(kernel, args);
    CHECK(kernel.calls() == 2);  // the poison call and the real one
  } else {
    run_raw(device, plan(), args);
  }
  const Comparison c = compare(args[2], ref);
  INFO(c.describe());
  CHECK(c.ok());
  note_exercised(device);
}

constexpr std::array<Path, 2> kPaths{Path::persistent, Path::raw};

// Runs op ("matmul" or "matmul_tf32") of s on arguments of dtype through the raw Device path,
// with plan (op's plan for s and dtype), and checks every element of C against the exact product
// of the (dtype-rounded) inputs within op's bound, widened for the 16-bit result's one rounding.
void check_plan(vgpu::Device& device, const vgpu::KernelPlan& plan, MatmulShape s, vgpu::DType dtype, bool tf32) {
  const auto a = representable(random_floats(std::size_t{s.m} * s.k, std::size_t{s.m} * s.k + 3), dtype);
  const auto b = representable(random_floats(std::size_t{s.k} * s.n, std::size_t{s.k} * s.n + 4), dtype);
  Reference ref = matmul_reference(a, b, s.m, s.k, s.n, tf32);
  for (std::size_t i = 0; i < ref.bound.size(); ++i)
    ref.bound[i] = vgpu::tolerance::narrowed(ref.value[i], ref.bound[i], dtype);
  HostTensors args{a, b, std::vector<float>(std::size_t{s.m} * s.n, kNaN)};
  run_raw(device, plan, args);
  const Comparison c = compare(args[2], ref);
  INFO(c.describe());
  CHECK(c.ok());
  note_exercised(device);
}

bool runs_glsl(const vgpu::Device& device) {
  return device.info().backend == vgpu::BackendKind::vulkan || device.info().backend == vgpu::BackendKind::opengl;
}

}  // namespace

TEST_CASE("matmul: square sizes match the double-precision reference", "[matmul]") {
  for (vgpu::Device device : devices_under_test())
    for (std::uint32_t n : {1u, 15u, 16u, 17u, 64u, 255u, 300u})
      for (Path path : kPaths) check_matmul(device, {n, n, n}, path);
}

TEST_CASE("matmul: non-square shapes, K = 1 and long K", "[matmul]") {
  const MatmulShape shapes[] = {
      {17, 300, 5},
      {1, 1000, 3},
      {255, 1, 255},
      {300, 17, 299},
      {1, 1, 1},
      {3, 1, 1},
      {1, 64, 1},
      {96, 256, 128},
      // Small tiles (the CPU's unpacked path), narrower and wider than a vector, in multi-tile grids.
      {200, 9, 4},
      {130, 40, 3},
      {7, 5, 200},
      {19, 20, 21}};
  for (vgpu::Device device : devices_under_test())
    for (const MatmulShape& s : shapes)
      for (Path path : kPaths) check_matmul(device, s, path);
}

TEST_CASE("matmul: every GLSL tiling at awkward and aligned shapes", "[matmul][tiling]") {
  // Awkward: partial tiles in every dimension, k not a multiple of BK, n not of 4 (edge path);
  // aligned: every workgroup takes the vec4 fast path, with more than one K step (double buffer).
  const MatmulShape shapes[] = {{17, 1000, 17}, {1, 17, 1000}, {1000, 1, 17}, {256, 64, 256}, {129, 33, 131}};
  for (vgpu::Device device : devices_under_test()) {
    if (!runs_glsl(device)) {
      skip_on(device, "the GLSL tilings run on Vulkan and OpenGL devices only");
      continue;
    }
    for (const vgpu::kernels::GlslMatmulTiling& t : vgpu::kernels::glsl_matmul_tilings()) {
      if (!t.fits(device.info())) {
        // A tiling the device cannot hold is refused with a Fix, not compiled.
        CHECK_THROWS_WITH(matmul_with(vgpu::kernels::gpu_builtin_tuner(t.name()), device.info(), 64, 64, 64),
                          Catch::Matchers::ContainsSubstring("Fix:"));
        continue;
      }
      for (const MatmulShape& s : shapes) check_matmul(device, s, Path::raw, t.name());
    }
    check_matmul(device, {64, 4097, 64}, Path::persistent, "128x64x8x8x4");  // long K, one partial tile
  }
}

#if VGPU_CONFORMANCE_CUDA_TILINGS
TEST_CASE("matmul: every CUDA tiling at awkward and aligned shapes", "[matmul][tiling][cuda]") {
  // Awkward: partial blocks in every dimension, k not a multiple of BK, n not of 4, 1-wide
  // products (edge path); aligned: every block takes the float4 fast path, with more than one K
  // step (double buffer) and, at 512², several blocks of each warp-tiled shape, 256×128 included.
  const MatmulShape shapes[] = {{17, 1000, 17}, {1, 17, 1000}, {1000, 1, 17},  {256, 64, 256},
                                {129, 33, 131}, {1, 1, 1},     {300, 4097, 5}, {512, 512, 512}};
  for (vgpu::Device device : devices_under_test()) {
    if (device.info().backend != vgpu::BackendKind::cuda) {
      skip_on(device, "the CUDA tilings run on CUDA devices only");
      continue;
    }
    for (const vgpu::cuda::CudaMatmulTiling& t : vgpu::cuda::cuda_matmul_tilings()) {
      for (const MatmulShape& s : shapes) check_matmul(device, s, Path::raw, t.name());
      check_matmul(device, {1000, 200, 1000}, Path::persistent, t.name());  // n % 4 = 0, k % BK ≠ 0 for BK 16
    }
    // Every candidate the measured choice may time is one of them, the rule's pick first.
    const vgpu::OpShape shape{"matmul", 4096, 4096, 4096};
    const auto rule = vgpu::cuda::cuda_op_tuner();
    const auto candidates = rule->candidates(shape, device.info());
    REQUIRE(!candidates.empty());
    CHECK(candidates.front().variant == rule->tune(shape, device.info()).variant);
    for (const vgpu::OpTuning& c : candidates) CHECK(vgpu::cuda::cuda_matmul_tiling(c.variant).name() == c.variant);
  }
}
#endif

TEST_CASE("matmul_tf32: TF32 allowed stays within TF32's bound on every device, and is float32 where no TF32 runs",
          "[matmul][tf32]") {
  const MatmulShape shapes[] = {{17, 300, 5}, {64, 64, 64}, {129, 33, 131}, {1, 1000, 3}, {256, 256, 256}};
  for (vgpu::Device device : devices_under_test())
    for (const MatmulShape& s : shapes) {
      INFO(device.info().id() << " matmul_tf32 " << s.m << "x" << s.k << "x" << s.n);
      // The rule's plans (nothing measured): TF32's where the backend offers it, else matmul's.
      const vgpu::KernelPlan tf32 = vgpu::ops::plan("matmul_tf32", device.info(), {s.m, s.k, s.n});
      CHECK(tf32.source.name == "vgpu.matmul_tf32");  // the result check's looser bound goes by this name
      check_plan(device, tf32, s, vgpu::DType::f32, true);
      const vgpu::KernelPlan highest = vgpu::ops::plan("matmul", device.info(), {s.m, s.k, s.n});
      if (tf32.options.defines.count("VGPU_MMA_TF32") != 0) continue;  // a TF32 kernel: the bound is its contract
      // No TF32 here: the same kernel as matmul, and the same bits.
      CHECK(tf32.options.defines == highest.options.defines);
      const auto a = random_floats(std::size_t{s.m} * s.k, 5), b = random_floats(std::size_t{s.k} * s.n, 6);
      HostTensors x{a, b, std::vector<float>(std::size_t{s.m} * s.n, kNaN)}, y = x;
      run_raw(device, tf32, x);
      run_raw(device, highest, y);
      CHECK(x[2] == y[2]);
    }
}

#if VGPU_CONFORMANCE_CUDA_TILINGS
TEST_CASE(
    "matmul: every CUDA tensor-core tiling (float16, bfloat16, TF32; warpgroup ones on sm_90) at awkward and "
    "aligned shapes",
    "[matmul][tiling][cuda][dtype][tf32]") {
  // Awkward: partial blocks everywhere, k and n off the 16-byte chunks (element-wise tile fill),
  // single rows and columns; aligned: the cp.async path with K past one pipeline round, a K that
  // ends inside a BK step (zero-filled chunks), several blocks of every tile shape.
  const MatmulShape awkward[] = {{17, 1000, 17}, {1, 17, 1000}, {1000, 1, 17}, {129, 33, 131}, {1, 1, 1}};
  const MatmulShape aligned[] = {{256, 64, 256}, {96, 40, 72}, {300, 4096, 8}, {512, 512, 512}, {130, 200, 264}};
  for (vgpu::Device device : devices_under_test()) {
    const vgpu::DeviceInfo& info = device.info();
    if (info.backend != vgpu::BackendKind::cuda) {
      skip_on(device, "the tensor-core tilings run on CUDA devices only");
      continue;
    }
    if (!vgpu::cuda::has_mma_f16(info)) {
      WARN(info.id() << " is older than sm_80: no tensor-core tilings to check there");
      skip_on(device, "older than sm_80: no tensor cores for these tilings");
      continue;
    }
    auto run = [&](const vgpu::cuda::CudaMmaTiling& t, vgpu::DType dtype, const MatmulShape& s) {
      INFO(info.id() << " " << t.name() << " " << vgpu::numpy_name(dtype) << " " << s.m << "x" << s.k << "x" << s.n);
      const auto tuner = vgpu::cuda::cuda_op_tuner(t.name());
      const vgpu::KernelPlan plan = vgpu::detail::builtin_plan(t.tf32 ? "matmul_tf32" : "matmul", info, tuner.get(),
                                                               {s.m, s.k, s.n}, nullptr, dtype);
      REQUIRE(plan.kernel_count() == 1);  // the tensor-core kernel alone: no conversions
      CHECK(plan.options.defines.count(t.wgmma ? "VGPU_WG_BF16" : t.tf32 ? "VGPU_MMA_TF32" : "VGPU_MMA_BF16") == 1);
      check_plan(device, plan, s, dtype, t.tf32);
    };
    const bool hopper = vgpu::cuda::has_wgmma(info);
    for (const auto& shapes : {std::span<const MatmulShape>(awkward), std::span<const MatmulShape>(aligned)})
      for (const MatmulShape& s : shapes) {
        for (const auto& t : vgpu::cuda::cuda_mma_tilings())
          for (vgpu::DType dtype : {vgpu::DType::f16, vgpu::DType::bf16}) run(t, dtype, s);
        for (const auto& t : vgpu::cuda::cuda_tf32_tilings()) run(t, vgpu::DType::f32, s);
        if (hopper)
          for (const auto& t : vgpu::cuda::cuda_wgmma_tilings())
            for (vgpu::DType dtype : {vgpu::DType::f16, vgpu::DType::bf16}) run(t, dtype, s);
      }
    if (!hopper) WARN(info.id() << " is not sm_90: no warpgroup-MMA tilings to check there");
  }
}
#endif

TEST_CASE("matmul: every Vulkan cooperative-matrix tiling (float16) at awkward and aligned shapes",
          "[matmul][tiling][dtype][coopmat]") {
  // Awkward: partial tiles everywhere, k and n off the 8-half vectors (element-wise loads, the
  // staged edge store), single rows and columns; aligned: vector loads with K past one step and
  // ending inside one, the cooperative store of whole tiles, several workgroups of every tiling.
  const MatmulShape shapes[] = {{17, 1000, 17}, {1, 17, 1000}, {1000, 1, 17},  {129, 33, 131},  {1, 1, 1},
                                {256, 64, 256}, {96, 40, 72},  {300, 4096, 8}, {512, 512, 512}, {130, 200, 264}};
  std::size_t ran = 0;
  for (vgpu::Device device : devices_under_test()) {
    const vgpu::DeviceInfo& info = device.info();
    if (!vgpu::kernels::has_coopmat_f16(info)) {
      skip_on(device, "no float16 cooperative matrices (VK_NV_cooperative_matrix) on this device");
      continue;
    }
    // Its truth test first: the runtime never runs the kernel where that failed.
    for (const vgpu::FeatureCheck& c : vgpu::check_features(device))
      if (c.feature == vgpu::kernels::kCoopMatrixFeature) {
        INFO(info.id() << " cooperative_matrix: " << vgpu::to_string(c.verdict) << " " << c.note);
        REQUIRE(c.verdict == vgpu::FeatureVerdict::passed);
      }
    for (const vgpu::kernels::GlslCoopMatrixTiling& t : vgpu::kernels::glsl_coopmat_tilings())
      for (const MatmulShape& s : shapes) {
        INFO(info.id() << " " << t.name() << " " << s.m << "x" << s.k << "x" << s.n);
        const auto tuner = vgpu::kernels::gpu_builtin_tuner(t.name());
        const vgpu::KernelPlan plan =
            vgpu::detail::builtin_plan("matmul", info, tuner.get(), {s.m, s.k, s.n}, nullptr, vgpu::DType::f16);
        REQUIRE(plan.kernel_count() == 1);  // the cooperative-matrix kernel alone: no conversions
        CHECK(plan.options.defines.count("VGPU_CM_BM") == 1);
        check_plan(device, plan, s, vgpu::DType::f16, false);
        ++ran;
      }
  }
  if (ran == 0) WARN("no device here has VK_NV_cooperative_matrix with 16x16x16 float16 (lavapipe has none): skipped");
}

TEST_CASE("matmul: split-K for K much larger than M and N", "[matmul][tiling]") {
  // On Vulkan/OpenGL these take two steps (slices, then their sum); elsewhere they are plain products.
  const MatmulShape shapes[] = {{17, 4097, 17}, {1, 8192, 1}, {3, 5000, 100}, {64, 65536, 64}};
  for (vgpu::Device device : devices_under_test()) {
    for (const MatmulShape& s : shapes) {
      if (runs_glsl(device)) {
        const vgpu::KernelPlan plan = vgpu::ops::matmul(device.info(), s.m, s.k, s.n);
        INFO(device.info().id() << " " << s.m << "x" << s.k << "x" << s.n);
        CHECK(plan.steps.size() == (vgpu::kernels::glsl_matmul_split_k(s.m, s.k, s.n, device.info()) > 1 ? 2u : 1u));
      }
      check_matmul(device, s, Path::persistent);
      check_matmul(device, s, Path::raw);
    }
    // Forced tilings take split-K too: each tile shape with partial slices.
    if (runs_glsl(device))
      for (const vgpu::kernels::GlslMatmulTiling& t : vgpu::kernels::glsl_matmul_tilings())
        if (t.fits(device.info())) check_matmul(device, {33, 4100, 21}, Path::raw, t.name());
  }
}

TEST_CASE("matmul: the GLSL tuner's choices and its override", "[matmul][tiling]") {
  vgpu::DeviceInfo gpu;
  gpu.type = vgpu::DeviceType::discrete_gpu;
  gpu.compute_units = 132;
  using vgpu::kernels::glsl_matmul_choice;
  CHECK(glsl_matmul_choice(16, 16, 16, gpu).naive);
  CHECK(glsl_matmul_choice(64, 64, 64, gpu).name() == "32x32x16x4x4");  // the most workgroups
  // Tall-skinny: split-K on the 64×64 tile, 2 workgroups per unit (132·2 / 1 tile, capped at 64 slices).
  CHECK(glsl_matmul_choice(64, 65536, 64, gpu).name() == "64x64x16x4x4");
  CHECK(vgpu::kernels::glsl_matmul_split_k(64, 65536, 64, gpu) == 64);
  CHECK(vgpu::kernels::glsl_matmul_split_k(1024, 1024, 1024, gpu) == 1);
  CHECK(vgpu::kernels::glsl_matmul_split_k(1024, 4096, 1024, gpu) == 1);  // K not ≫ M, N
  CHECK(glsl_matmul_choice(4096, 4096, 4096, gpu).name() == "128x128x8x8x8");
  CHECK(glsl_matmul_choice(1280, 1280, 1280, gpu).name() == "128x64x8x8x4");  // 100 of 128² tiles, 200 of 128×64
  CHECK(glsl_matmul_choice(1024, 1024, 1024, gpu).name() == "64x64x16x4x4");  // 128 of 128×64 tiles < 132 units
  // A GPU whose driver does not tell its units (Vulkan on NVIDIA without VK_NV_shader_sm_builtins)
  // is sized as a 128-unit part, not a 1-unit one (which would take 128×128 at 1024: 39% of
  // cuBLAS on the H200 against 68% for 64×64).
  vgpu::DeviceInfo unknown = gpu;
  unknown.compute_units = 0;
  CHECK(glsl_matmul_choice(1024, 1024, 1024, unknown).name() == "128x64x8x8x4");
  CHECK(glsl_matmul_choice(4096, 4096, 4096, unknown).name() == "128x128x8x8x8");
  vgpu::DeviceInfo cpu = gpu;
  cpu.type = vgpu::DeviceType::software;
  CHECK(glsl_matmul_choice(16, 16, 16, cpu).naive);
  CHECK(glsl_matmul_choice(32, 32, 32, cpu).name() == "32x32x16x4x4");
  CHECK(glsl_matmul_choice(64, 64, 64, cpu).name() == "64x64x16x4x4");
  CHECK(glsl_matmul_choice(256, 256, 256, cpu).name() == "128x128x8x8x8");
  // Every choice is a listed (precompiled) tiling.
  for (std::uint64_t n : {1u, 17u, 64u, 65u, 256u, 1000u, 4097u})
    for (const vgpu::DeviceInfo* d : {&gpu, &cpu}) {
      const auto c = glsl_matmul_choice(n, n, n, *d);
      CHECK(vgpu::kernels::glsl_matmul_tiling(c.name()) == c);
    }
  // A name that is not a tiling fails the plan with the known ones in its Fix.
  gpu.limits.max_workgroup_count = {65535, 65535, 65535};
  try {
    (void)matmul_with(vgpu::kernels::gpu_builtin_tuner("64x64x3x4x4"), gpu, 8, 8, 8);
    FAIL("an unknown tiling was accepted");
  } catch (const vgpu::Error& e) {
    CHECK(e.category() == vgpu::ErrorCategory::invalid_argument);
    CHECK_THAT(std::string(e.what()), Catch::Matchers::ContainsSubstring("128x128x8x8x8"));
  }
  const vgpu::KernelPlan naive = matmul_with(vgpu::kernels::gpu_builtin_tuner("naive"), gpu, 17, 5, 33);
  CHECK(naive.options.defines.at("VGPU_MM_NAIVE") == "1");
  CHECK(naive.steps[0].groups.x == 3);  // 33 columns over 16-wide workgroups
  CHECK(naive.steps[0].groups.y == 2);
}

TEST_CASE("matmul: a persistent kernel reused with new data gives new results", "[matmul]") {
  // Stale buffers, cached results or a batch recorded against old data would all show here.
  constexpr std::uint32_t m = 17, k = 33, n = 19;
  for (vgpu::Device device : devices_under_test()) {
    INFO(device.info().id());
    vgpu::PersistentKernel kernel(device, vgpu::ops::matmul(device.info(), m, k, n));
    for (std::uint64_t round = 0; round < 4; ++round) {
      INFO("round " << round);
      const auto a = random_floats(m * k, 1000 + round);
      const auto b = random_floats(k * n, 2000 + round);
      std::vector<float> c(m * n, kNaN);
      kernel({vgpu::TensorArg(a.data(), {m, k}), vgpu::TensorArg(b.data(), {k, n}), vgpu::TensorArg(c.data(), {m, n})});
      const Comparison cmp = compare(c, matmul_reference(a, b, m, k, n));
      INFO(cmp.describe());
      CHECK(cmp.ok());
    }
    CHECK(kernel.calls() == 4);
    CHECK(kernel.dispatches() == 4 * kernel.plan().steps.size());
    note_exercised(device);
  }
}

TEST_CASE("matmul: raw Device path with one binding set dispatched repeatedly", "[matmul][raw]") {
  // compile / bind once, then rewrite inputs and dispatch again: the binding set must see
  // the buffers' current contents, and C must be fully overwritten each time.
  constexpr std::uint32_t m = 31, k = 7, n = 45;
  for (vgpu::Device device : devices_under_test()) {
    INFO(device.info().id());
    const vgpu::KernelPlan plan = vgpu::ops::matmul(device.info(), m, k, n);
    REQUIRE(plan.steps.size() == 1);
    vgpu::Kernel kernel = device.compile(plan.source, plan.options);
    REQUIRE(kernel);
    CHECK(kernel.name() == plan.source.name);
    vgpu::Buffer A = device.create_buffer(m * k * 4), B = device.create_buffer(k * n * 4),
                 C = device.create_buffer(m * n * 4);
    vgpu::BindingSet set = device.bind(kernel, {{0, A}, {1, B}, {2, C}});
    for (std::uint64_t round = 0; round < 3; ++round) {
      INFO("round " << round);
      const auto a = random_floats(m * k, 3000 + round), b = random_floats(k * n, 4000 + round);
      const std::vector<float> nan(m * n, kNaN);
      device.write(A, a.data(), a.size() * 4);
      device.write(B, b.data(), b.size() * 4);
      device.write(C, nan.data(), nan.size() * 4);
      device.dispatch(kernel, set, plan.steps[0].params, plan.steps[0].groups);
      std::vector<float> c(m * n, kNaN);
      device.read(C, c.data(), c.size() * 4);
      const Comparison cmp = compare(c, matmul_reference(a, b, m, k, n));
      INFO(cmp.describe());
      CHECK(cmp.ok());
    }
    note_exercised(device);
  }
}

}  // namespace vgpu_test
