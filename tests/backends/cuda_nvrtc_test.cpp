// SPDX-License-Identifier: Apache-2.0
// tests/backends/cuda_nvrtc_test.cpp — needs no GPU: NVRTC compiles every built-in CUDA kernel (with the
// defines and block sizes the op plans use) for sm_90 and for the oldest and newest SM this
// NVRTC supports, so CI on a CPU-only machine catches CUDA source errors; and every built-in
// plan finds its L3 fatbin (when the build had nvcc). Exits 77 with the reason when NVRTC
// cannot be loaded.
#include "cuda_nvrtc.hpp"
#include "cuda_op_tuner.hpp"
#include "cuda_spec.hpp"

#include "support/catch.hpp"
#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "vgpu/kernels/cuda_source.hpp"
#include "vgpu/kernels/kernel_abi.hpp"
#include "vgpu/cache/precompiled.hpp"
#include "support/catch_session.hpp"
#include "support/expect_error.hpp"
#include "support/kernel_sources.hpp"
#include "support/tuned_plan.hpp"
#include "vgpu/vgpu.hpp"

namespace vgpu_test {
namespace {

const vgpu::cuda::NvrtcFns& nvrtc() { return *vgpu::cuda::load_nvrtc(nullptr); }

/// A CUDA device description with sms SMs (no device needed).
vgpu::DeviceInfo cuda_device(std::uint32_t sms) {
  vgpu::DeviceInfo dev;
  dev.backend = vgpu::BackendKind::cuda;
  dev.compute_units = sms;
  dev.dialects = {std::string(vgpu::dialect::cuda)};
  dev.limits.max_workgroup_count = {2147483647u, 65535u, 65535u};
  return dev;
}

/// cuda_device(sms) of the compute capability its "sm_XY" feature names (sm: "sm_90").
vgpu::DeviceInfo cuda_device_sm(std::uint32_t sms, const char* sm) {
  vgpu::DeviceInfo dev = cuda_device(sms);
  dev.features = {sm, "cuda_c"};
  return dev;
}

/// The plans of every built-in op, with matmuls that take each of the CUDA tilings on a
/// 132-SM GPU (small grid → 64×64, mid → 128×64, large → 128×128).
std::vector<vgpu::KernelPlan> cuda_plans() {
  const vgpu::DeviceInfo dev = cuda_device(132);
  return {vgpu::ops::matmul(dev, 67, 33, 129),
          vgpu::ops::matmul(dev, 1500, 40, 1100),
          vgpu::ops::matmul(dev, 2048, 64, 2048),
          vgpu::ops::axpy(dev, 1000),
          vgpu::ops::add(dev, 1000),
          vgpu::ops::mul(dev, 1000),
          vgpu::ops::reduce_sum(dev, 1000000),
          vgpu::ops::softmax_rows(dev, 3, 7)};
}

/// The matmul plan's CUDA tiling, as "BMxBN".
std::string tiling(const vgpu::KernelPlan& plan) {
  return plan.options.defines.at("VGPU_MM_BM") + "x" + plan.options.defines.at("VGPU_MM_BN");
}

}  // namespace

TEST_CASE("every built-in op plan carries CUDA source and compiles for sm_90", "[cuda][nvrtc]") {
  for (const auto& plan : cuda_plans()) {
    INFO(plan.source.name);
    REQUIRE(!cuda_of(plan.source).empty());
    REQUIRE(!cuda_entry_of(plan.source).empty());
    const auto image = vgpu::cuda::compile_cuda(nvrtc(), plan.source, plan.options, 90);
    CHECK(image.size() > 4);
    CHECK(image[0] == 0x7f);  // an ELF cubin, not PTX
  }
}

TEST_CASE("16-bit plans: every kernel, the conversions included, compiles for sm_90 and has its fatbin",
          "[cuda][nvrtc][dtype]") {
  const vgpu::DeviceInfo dev = cuda_device(132);
  for (vgpu::DType dtype : {vgpu::DType::f16, vgpu::DType::bf16}) {
    const vgpu::KernelPlan plan = vgpu::ops::plan("axpy", dev, {1001}, dtype);
    REQUIRE(plan.kernel_count() == 3);  // axpy, widen, narrow
    for (std::size_t i = 0; i < plan.kernel_count(); ++i) {
      INFO(plan.kernel_source(i).name);
      const auto image = vgpu::cuda::compile_cuda(nvrtc(), plan.kernel_source(i), plan.kernel_options(i), 90);
      CHECK(image.size() > 4);
#if VGPU_TEST_EXPECT_CUDA_FATBIN
      CHECK(!vgpu::cache::find_precompiled_cuda(cuda_of(plan.kernel_source(i)), cuda_entry_of(plan.kernel_source(i)),
                                                plan.kernel_options(i))
                 .empty());
#endif
    }
  }
}

TEST_CASE("CUDA matmul tiling: the largest tile that still gives every SM a block", "[cuda][matmul]") {
  const vgpu::DeviceInfo h200 = cuda_device(132);
  CHECK(tiling(vgpu::ops::matmul(h200, 4096, 4096, 4096)) == "128x128");  // 1024 blocks
  CHECK(tiling(vgpu::ops::matmul(h200, 2048, 2048, 2048)) == "128x128");  // 256 blocks
  CHECK(tiling(vgpu::ops::matmul(h200, 1500, 64, 1200)) == "128x64");     // 12·19 = 228 (128×128: 120)
  CHECK(tiling(vgpu::ops::matmul(h200, 1024, 1024, 1024)) == "64x64");    // 128×64 gives only 128
  CHECK(tiling(vgpu::ops::matmul(h200, 16, 16, 16)) == "64x64");
  CHECK(tiling(vgpu::ops::matmul(cuda_device(8), 1024, 1024, 1024)) == "128x128");
  for (const auto& plan : cuda_plans()) {
    if (plan.source.name != "vgpu.matmul") continue;
    // The block is (BN/TN, BM/TM) threads and the groups cover C with BM×BN tiles.
    const auto& d = plan.options.defines;
    const std::uint32_t bm = std::stoul(d.at("VGPU_MM_BM")), bn = std::stoul(d.at("VGPU_MM_BN"));
    CHECK(plan.options.workgroup_size[0] == bn / std::stoul(d.at("VGPU_MM_TN")));
    CHECK(plan.options.workgroup_size[1] == bm / std::stoul(d.at("VGPU_MM_TM")));
    const auto p = plan.steps[0].params.as<vgpu::kernels::MatmulParams>();
    CHECK(plan.steps[0].groups.x == (p.n + bn - 1) / bn);
    CHECK(plan.steps[0].groups.y == (p.m + bm - 1) / bm);
  }
}

TEST_CASE("CUDA matmul: every tiling compiles, is in L3 and is named for VGPU_MATMUL_TILING", "[cuda][matmul]") {
  const auto tilings = vgpu::cuda::cuda_matmul_tilings();
  REQUIRE(tilings.size() >= 12);
  for (const vgpu::cuda::CudaMatmulTiling& t : tilings) {
    INFO(t.name());
    CHECK(vgpu::cuda::cuda_matmul_tiling(t.name()) == t);
    // Forced, the plan takes exactly this tiling's block, defines and grid.
    const vgpu::DeviceInfo dev = cuda_device(132);
    const vgpu::KernelPlan plan = matmul_with(vgpu::cuda::cuda_op_tuner(t.name()), dev, 1000, 17, 4097);
    const vgpu::OpTuning want = t.tuning();
    CHECK(want.variant == t.name());
    CHECK(plan.options.defines == want.options.defines);
    CHECK(plan.options.workgroup_size == want.options.workgroup_size);
    const std::uint32_t threads = plan.options.workgroup_size[0] * plan.options.workgroup_size[1];
    CHECK((threads == 256u || threads == 128u || threads == 64u));  // whole warps, as __launch_bounds__ says
    CHECK(plan.steps[0].groups.x == (4097 + t.bn - 1) / t.bn);
    CHECK(plan.steps[0].groups.y == (1000 + t.bm - 1) / t.bm);
    CHECK(vgpu::cuda::compile_cuda(nvrtc(), plan.source, plan.options, 90).size() > 4);
#if VGPU_TEST_EXPECT_CUDA_FATBIN
    CHECK(!vgpu::cache::find_precompiled_cuda(cuda_of(plan.source), cuda_entry_of(plan.source), plan.options).empty());
#endif
  }
  // A name that is no CUDA tiling fails the plan, listing the CUDA names.
  const vgpu::DeviceInfo dev = cuda_device(132);
  const auto glsl_named = vgpu::cuda::cuda_op_tuner("32x32x16x4x4");  // a GLSL tiling, not a CUDA one
  REQUIRE_VGPU_ERROR(invalid_argument, "128x128x8x8x8w32x64", matmul_with(glsl_named, dev, 8, 8, 8));
  REQUIRE_VGPU_ERROR(invalid_argument, "Fix:", matmul_with(glsl_named, dev, 8, 8, 8));
}

TEST_CASE("CUDA matmul candidates: the rule's pick first, distinct tilings that fill the SMs", "[cuda][matmul]") {
  const vgpu::DeviceInfo h200 = cuda_device(132);
  const auto rule = vgpu::cuda::cuda_op_tuner();
  const vgpu::OpTuner& tuner = *rule;
  // Small products are not worth measuring: the rule alone.
  CHECK(tuner.candidates({"matmul", 255, 256, 256}, h200).size() == 1);
  CHECK(tuner.candidates({"axpy", 1, 1, 1u << 24}, h200).size() == 1);
  for (std::uint64_t n : {256u, 1000u, 1024u, 2048u, 4096u, 4097u}) {
    INFO("n = " << n);
    const vgpu::OpShape shape{"matmul", n, n, n};
    const auto c = tuner.candidates(shape, h200);
    REQUIRE(!c.empty());
    CHECK(c.size() <= 5);
    CHECK(c.front().variant == tuner.tune(shape, h200).variant);
    for (std::size_t i = 0; i < c.size(); ++i) {
      const auto t = vgpu::cuda::cuda_matmul_tiling(c[i].variant);  // every one a known (precompiled) tiling
      CHECK(c[i].options.defines == t.tuning().options.defines);
      if (i > 0) CHECK(t.grid(n, n) * 10 >= 132 * 9);  // none leaves SMs idle
      for (std::size_t j = 0; j < i; ++j) CHECK(c[i].variant != c[j].variant);
    }
  }
  // At 4096 the warp-tiled and large tiles are all offered; at 1024 only those with ≥ 119 blocks.
  CHECK(tuner.candidates({"matmul", 4096, 4096, 4096}, h200).size() == 5);
  for (const auto& c : tuner.candidates({"matmul", 1024, 1024, 1024}, h200))
    CHECK(c.variant.rfind("128x128", 0) != 0);  // 64 blocks of 128×128 would idle half the GPU
  // From 2048 the cp.async-pipelined tilings are measured, beside the fastest register-prefetch
  // ones of the earlier H200 runs (so the measured choice can only gain).
  for (std::uint64_t n : {2048u, 4096u}) {
    INFO("n = " << n);
    std::vector<std::string> names;
    for (const auto& c : tuner.candidates({"matmul", n, n, n}, h200)) names.push_back(c.variant);
    for (const char* want :
         {"256x128x8x16x8w64x64s3", "128x128x16x8x8w32x64s3", "128x128x8x8x16w32x128", "128x128x8x8x8w32x64"})
      CHECK(std::find(names.begin(), names.end(), want) != names.end());
  }
  // Forced: that tiling only, nothing to measure.
  const auto forced = vgpu::cuda::cuda_op_tuner("128x256x8x8x16w32x128");
  const auto f = forced->candidates({"matmul", 4096, 4096, 4096}, h200);
  REQUIRE(f.size() == 1);
  CHECK(f[0].variant == "128x256x8x8x16w32x128");
  CHECK(f[0].options.defines.at("VGPU_MM_MIN_BLOCKS") == "1");
}

TEST_CASE("16-bit matmul on sm_80+: a tensor-core plan native to the dtype, compiled and in L3",
          "[cuda][matmul][dtype]") {
  // An Ampere-class GPU with the H200's 132 SMs (sm_90 takes the warpgroup kernel: below).
  const vgpu::DeviceInfo h200 = cuda_device_sm(132, "sm_80"), turing = cuda_device_sm(40, "sm_75");
  CHECK(vgpu::cuda::has_mma_f16(h200));
  CHECK(vgpu::cuda::has_mma_f16(cuda_device_sm(132, "sm_90")));
  CHECK(!vgpu::cuda::has_mma_f16(turing));
  CHECK(!vgpu::cuda::has_mma_f16(cuda_device(132)));  // no "sm_XY" feature: never assumed
  CHECK(vgpu::cuda::has_mma_f16(cuda_device_sm(148, "sm_100")));

  struct Case {
    std::uint32_t m, k, n;
    const char* tile;
  };
  // The largest tile whose grid still gives each of the 132 SMs a block, as for float32.
  const Case cases[] = {{4096, 4096, 4096, "128x128"},  // 1024 blocks
                        {1500, 40, 1200, "128x64"},     // 12·19 = 228 (128×128: 120)
                        {1024, 1024, 1024, "64x64"},    // 128×64 gives only 128
                        {67, 33, 129, "64x64"}};        // awkward sizes: vector path off (k, n odd)
  for (vgpu::DType dtype : {vgpu::DType::f16, vgpu::DType::bf16}) {
    for (const Case& c : cases) {
      INFO(vgpu::numpy_name(dtype) << " " << c.m << "x" << c.k << "x" << c.n);
      const vgpu::KernelPlan plan = vgpu::ops::plan("matmul", h200, {c.m, c.k, c.n}, dtype);
      // One kernel reads and writes the 16-bit arguments: no conversions, no float32 twins.
      REQUIRE(plan.kernel_count() == 1);
      REQUIRE(plan.tensors.size() == 3);
      for (const vgpu::TensorSpec& t : plan.tensors) {
        CHECK(t.dtype == dtype);
        CHECK(!t.scratch);
      }
      CHECK(plan.source.name == "vgpu.matmul");
      REQUIRE(plan.source.sources.size() == 1);  // only CUDA's tensor-core code may read them
      CHECK(cuda_entry_of(plan.source) == "vgpu_matmul_mma");
      const auto& d = plan.options.defines;
      CHECK(d.at("VGPU_MMA_BM") + "x" + d.at("VGPU_MMA_BN") == c.tile);
      CHECK(d.at("VGPU_MMA_BF16") == (dtype == vgpu::DType::bf16 ? "1" : "0"));
      const std::uint32_t bm = std::stoul(d.at("VGPU_MMA_BM")), bn = std::stoul(d.at("VGPU_MMA_BN"));
      const std::uint32_t warps = (bm / std::stoul(d.at("VGPU_MMA_WM"))) * (bn / std::stoul(d.at("VGPU_MMA_WN")));
      CHECK(plan.options.workgroup_size == std::array<std::uint32_t, 3>{warps * 32, 1, 1});
      CHECK(plan.steps[0].groups.x == (c.n + bn - 1) / bn);
      CHECK(plan.steps[0].groups.y == (c.m + bm - 1) / bm);
      // The bindings ask for 2 bytes per element: A m·k, B k·n, C m·n.
      const vgpu::ParamsBlock& pb = plan.steps[0].params;
      const vgpu::Groups& g = plan.steps[0].groups;
      CHECK(plan.source.bindings[0].required_bytes(pb, g) == 2ull * c.m * c.k);
      CHECK(plan.source.bindings[1].required_bytes(pb, g) == 2ull * c.k * c.n);
      CHECK(plan.source.bindings[2].required_bytes(pb, g) == 2ull * c.m * c.n);
      for (int sm : {80, 90}) {
        const auto image = vgpu::cuda::compile_cuda(nvrtc(), plan.source, plan.options, sm);
        REQUIRE(image.size() > 4);
        CHECK(image[0] == 0x7f);  // an ELF cubin
      }
#if VGPU_TEST_EXPECT_CUDA_FATBIN
      CHECK(
          !vgpu::cache::find_precompiled_cuda(cuda_of(plan.source), cuda_entry_of(plan.source), plan.options).empty());
#endif
    }
    // Before sm_80 (and on a GPU that names no SM): the float32 plan between conversions.
    for (const vgpu::DeviceInfo& older : {turing, cuda_device(132)}) {
      const vgpu::KernelPlan plan = vgpu::ops::plan("matmul", older, {256, 256, 256}, dtype);
      CHECK(plan.kernel_count() == 3);  // widen, matmul, narrow
      CHECK(cuda_entry_of(plan.source) == "vgpu_matmul");
    }
  }

  const auto rule = vgpu::cuda::cuda_op_tuner();
  // Every tensor-core tiling that fills the SMs is a candidate, each native, none a float32 one;
  // float32 on the same GPU is offered none of them.
  const auto c16 = rule->candidates({"matmul", 4096, 4096, 4096, vgpu::DType::bf16}, h200);
  CHECK(c16.size() == vgpu::cuda::cuda_mma_tilings().size());
  CHECK(c16.front().variant == rule->tune({"matmul", 4096, 4096, 4096, vgpu::DType::bf16}, h200).variant);
  for (const vgpu::OpTuning& t : c16) {
    CHECK(t.native_dtype);
    CHECK(t.variant.rfind("mma", 0) == 0);
  }
  for (const vgpu::OpTuning& t : rule->candidates({"matmul", 4096, 4096, 4096}, h200)) CHECK(!t.native_dtype);
  CHECK(rule->candidates({"matmul", 64, 64, 64, vgpu::DType::f16}, h200).size() == 1);

  // VGPU_MATMUL_TILING may force a tensor-core tiling: 16-bit matmuls take it, float32 keeps its rule.
  for (const vgpu::cuda::CudaMmaTiling& t : vgpu::cuda::cuda_mma_tilings()) {
    INFO(t.name());
    const auto forced = vgpu::cuda::cuda_op_tuner(t.name());
    const auto f = forced->candidates({"matmul", 4096, 4096, 4096, vgpu::DType::f16}, h200);
    REQUIRE(f.size() == 1);
    CHECK(f[0].variant == t.name());
    CHECK(f[0].options.defines == t.tuning(vgpu::DType::f16).options.defines);
    CHECK(!forced->tune({"matmul", 4096, 4096, 4096}, h200).native_dtype);
  }
  const auto bad = vgpu::cuda::cuda_op_tuner("mma1x1x1w1x1s1");
  REQUIRE_VGPU_ERROR(invalid_argument, "mma128x128x32w64x32s2", bad->tune({"matmul", 8, 8, 8, vgpu::DType::f16}, h200));
  REQUIRE_VGPU_ERROR(invalid_argument, "Fix:", bad->tune({"matmul", 8, 8, 8, vgpu::DType::f16}, h200));
}

TEST_CASE("16-bit matmul on sm_90: warpgroup-MMA plans where their grid fills the SMs, mma.sync below",
          "[cuda][matmul][dtype][wgmma]") {
  const vgpu::DeviceInfo h200 = cuda_device_sm(132, "sm_90");
  CHECK(vgpu::cuda::has_wgmma(h200));
  for (const char* sm : {"sm_80", "sm_89", "sm_100", "sm_120"}) CHECK(!vgpu::cuda::has_wgmma(cuda_device_sm(132, sm)));
  CHECK(!vgpu::cuda::has_wgmma(cuda_device(132)));

  struct Case {
    std::uint32_t m, k, n;
    const char* variant;
  };
  // The largest tile whose grid gives each of the 132 SMs a block: 128×256 from 4096² (512
  // blocks), 128×128 at 2048² (128×256 gives 128), mma.sync's 64×64 at 1024² (128×64: 128).
  const Case cases[] = {{4096, 4096, 4096, "wgmma128x256x64s4"},
                        {2048, 2048, 2048, "wgmma128x128x64s6"},
                        {1024, 1024, 1024, "mma64x64x32w32x32s3"},
                        {2049, 67, 1500, "wgmma128x128x64s6"}};  // awkward: element-wise fill
  for (vgpu::DType dtype : {vgpu::DType::f16, vgpu::DType::bf16}) {
    for (const Case& c : cases) {
      INFO(vgpu::numpy_name(dtype) << " " << c.m << "x" << c.k << "x" << c.n);
      const vgpu::KernelPlan plan = vgpu::ops::plan("matmul", h200, {c.m, c.k, c.n}, dtype);
      REQUIRE(plan.kernel_count() == 1);
      for (const vgpu::TensorSpec& t : plan.tensors) CHECK(t.dtype == dtype);
      const bool wgmma = std::string(c.variant).rfind("wgmma", 0) == 0;
      CHECK(cuda_entry_of(plan.source) == (wgmma ? "vgpu_matmul_wgmma" : "vgpu_matmul_mma"));
      if (!wgmma) continue;
      const auto& d = plan.options.defines;
      const std::uint32_t bn = std::stoul(d.at("VGPU_WG_BN"));
      CHECK("wgmma128x" + d.at("VGPU_WG_BN") + "x64s" + d.at("VGPU_WG_STAGES") == c.variant);
      CHECK(d.at("VGPU_WG_BF16") == (dtype == vgpu::DType::bf16 ? "1" : "0"));
      CHECK(plan.options.workgroup_size == std::array<std::uint32_t, 3>{256, 1, 1});
      CHECK(plan.steps[0].groups.x == (c.n + bn - 1) / bn);
      CHECK(plan.steps[0].groups.y == (c.m + 127) / 128);
      // NVRTC builds it for sm_90a: a cubin whose ELF flags name the architecture-specific target.
      const auto image = vgpu::cuda::compile_cuda(nvrtc(), plan.source, plan.options, 90);
      REQUIRE(image.size() > 4);
      CHECK(image[0] == 0x7f);
#if VGPU_TEST_EXPECT_CUDA_FATBIN
      CHECK(
          !vgpu::cache::find_precompiled_cuda(cuda_of(plan.source), cuda_entry_of(plan.source), plan.options).empty());
#endif
    }
  }
  const auto rule = vgpu::cuda::cuda_op_tuner();
  // Candidates: every warpgroup and mma.sync tiling that fills the SMs, the rule's pick first.
  const auto c16 = rule->candidates({"matmul", 4096, 4096, 4096, vgpu::DType::f16}, h200);
  CHECK(c16.size() == vgpu::cuda::cuda_wgmma_tilings().size() + vgpu::cuda::cuda_mma_tilings().size());
  CHECK(c16.front().variant == "wgmma128x256x64s4");
  for (const vgpu::cuda::CudaMmaTiling& t : vgpu::cuda::cuda_wgmma_tilings()) {
    INFO(t.name());
    const auto f = vgpu::cuda::cuda_op_tuner(t.name())->candidates({"matmul", 512, 512, 512, vgpu::DType::bf16}, h200);
    REQUIRE(f.size() == 1);
    CHECK(f[0].variant == t.name());
    CHECK(f[0].options.defines.at("VGPU_WG_BF16") == "1");
    // Warp-specialized: a third warpgroup copies.
    CHECK(f[0].options.defines.count("VGPU_WG_SPECIALIZED") == (t.specialized ? 1u : 0u));
    CHECK(f[0].options.workgroup_size[0] == (t.specialized ? 384u : 256u));
    CHECK((t.name().size() > 2 && t.name().substr(t.name().size() - 2) == "ws") == t.specialized);
#if VGPU_TEST_EXPECT_CUDA_FATBIN
    CHECK(!vgpu::cache::find_precompiled_cuda(std::string(vgpu::kernels::builtin_cuda("matmul_wgmma").source),
                                              "vgpu_matmul_wgmma", f[0].options)
               .empty());
#endif
  }
  // A wgmma tiling forced on an sm_80 GPU is refused with the names that GPU has.
  REQUIRE_VGPU_ERROR(invalid_argument, "sm_90 only",
                     vgpu::cuda::cuda_op_tuner("wgmma128x256x64s4")
                         ->tune({"matmul", 64, 64, 64, vgpu::DType::f16}, cuda_device_sm(108, "sm_80")));
}

TEST_CASE("matmul_tf32 on sm_80+: a TF32 tensor-core plan on float32, compiled and in L3, float32 elsewhere",
          "[cuda][matmul][tf32]") {
  const vgpu::DeviceInfo h200 = cuda_device_sm(132, "sm_90"), turing = cuda_device_sm(40, "sm_75");
  struct Case {
    std::uint32_t m, k, n;
    const char* tile;
  };
  const Case cases[] = {{4096, 4096, 4096, "128x128"}, {1500, 40, 1200, "128x64"}, {67, 33, 129, "64x64"}};
  for (const Case& c : cases) {
    INFO(c.m << "x" << c.k << "x" << c.n);
    const vgpu::KernelPlan plan = vgpu::ops::plan("matmul_tf32", h200, {c.m, c.k, c.n});
    REQUIRE(plan.kernel_count() == 1);
    CHECK(plan.source.name == "vgpu.matmul_tf32");
    for (const vgpu::TensorSpec& t : plan.tensors) CHECK(t.dtype == vgpu::DType::f32);
    REQUIRE(plan.source.sources.size() == 1);
    CHECK(cuda_entry_of(plan.source) == "vgpu_matmul_mma");
    const auto& d = plan.options.defines;
    CHECK(d.at("VGPU_MMA_TF32") == "1");
    CHECK(d.count("VGPU_MMA_BF16") == 0);
    CHECK(d.at("VGPU_MMA_BM") + "x" + d.at("VGPU_MMA_BN") == c.tile);
    CHECK(plan.source.bindings[2].required_bytes(plan.steps[0].params, plan.steps[0].groups) == 4ull * c.m * c.n);
    for (int sm : {80, 90}) CHECK(vgpu::cuda::compile_cuda(nvrtc(), plan.source, plan.options, sm).size() > 4);
#if VGPU_TEST_EXPECT_CUDA_FATBIN
    CHECK(!vgpu::cache::find_precompiled_cuda(cuda_of(plan.source), cuda_entry_of(plan.source), plan.options).empty());
#endif
    // matmul (highest) on the same GPU never takes TF32.
    CHECK(vgpu::ops::plan("matmul", h200, {c.m, c.k, c.n}).options.defines.count("VGPU_MMA_TF32") == 0);
  }
  // Before sm_80: float32's tiling, under the op's name.
  const vgpu::KernelPlan old = vgpu::ops::plan("matmul_tf32", turing, {256, 256, 256});
  CHECK(old.source.name == "vgpu.matmul_tf32");
  CHECK(cuda_entry_of(old.source) == "vgpu_matmul");
  CHECK(old.options.defines == vgpu::ops::plan("matmul", turing, {256, 256, 256}).options.defines);
  // 16-bit operands with TF32 allowed: their own tensor-core plan (TF32 is about float32).
  CHECK(vgpu::ops::plan("matmul_tf32", h200, {256, 256, 256}, vgpu::DType::f16).options.defines.at("VGPU_MMA_BF16") ==
        "0");

  const auto rule = vgpu::cuda::cuda_op_tuner();
  vgpu::OpShape shape{"matmul", 4096, 4096, 4096};
  shape.tf32 = true;
  const auto c32 = rule->candidates(shape, h200);
  CHECK(c32.size() == vgpu::cuda::cuda_tf32_tilings().size());
  for (const vgpu::OpTuning& t : c32) {
    CHECK(t.tf32);
    CHECK(!t.native_dtype);
    CHECK(t.variant.rfind("tf32", 0) == 0);
  }
  for (const vgpu::cuda::CudaMmaTiling& t : vgpu::cuda::cuda_tf32_tilings()) {
    INFO(t.name());
    const auto forced = vgpu::cuda::cuda_op_tuner(t.name());
    CHECK(forced->tune(shape, h200).variant == t.name());
    // A TF32 name forces TF32 matmuls only: 16-bit and plain float32 ones keep their rules.
    CHECK(!forced->tune({"matmul", 4096, 4096, 4096}, h200).tf32);
    CHECK(forced->tune({"matmul", 4096, 4096, 4096, vgpu::DType::bf16}, h200).native_dtype);
  }
  REQUIRE_VGPU_ERROR(invalid_argument, "tf32_128x128x16w64x32s2",
                     vgpu::cuda::cuda_op_tuner("tf32x")->tune(shape, h200));
}

TEST_CASE("L3: every built-in CUDA plan finds its build-time fatbin, and only its own", "[cuda][l3]") {
#if VGPU_TEST_EXPECT_CUDA_FATBIN
  REQUIRE(vgpu::cache::precompiled_cuda_count() >= 8);
  CHECK(vgpu::cache::precompiled_cuda_archs().find("90") != std::string_view::npos);
  for (const auto& plan : cuda_plans()) {
    INFO(plan.source.name);
    const auto fatbin =
        vgpu::cache::find_precompiled_cuda(cuda_of(plan.source), cuda_entry_of(plan.source), plan.options);
    REQUIRE(fatbin.size() > 16);
    // The fatbin container's magic, 0xBA55ED50 little-endian.
    CHECK((fatbin[0] == 0x50 && fatbin[1] == 0xed && fatbin[2] == 0x55 && fatbin[3] == 0xba));
    // Any other text, entry, define or block size is not this binary.
    CHECK(vgpu::cache::find_precompiled_cuda(cuda_of(plan.source) + " ", cuda_entry_of(plan.source), plan.options)
              .empty());
    CHECK(vgpu::cache::find_precompiled_cuda(cuda_of(plan.source), "other_entry", plan.options).empty());
    vgpu::CompileOptions extra = plan.options;
    extra.defines["EXTRA"] = "1";
    CHECK(vgpu::cache::find_precompiled_cuda(cuda_of(plan.source), cuda_entry_of(plan.source), extra).empty());
    vgpu::CompileOptions block = plan.options;
    block.workgroup_size[2] = 2;
    CHECK(vgpu::cache::find_precompiled_cuda(cuda_of(plan.source), cuda_entry_of(plan.source), block).empty());
  }
#else
  // Built without nvcc (or with VGPU_CUDA_FATBIN=OFF): the table must be empty, never stale.
  CHECK(vgpu::cache::precompiled_cuda_count() == 0);
  WARN("this build has no CUDA fatbins (no nvcc at build time): built-ins compile with NVRTC");
#endif
}

TEST_CASE("every built-in CUDA kernel compiles for the oldest and newest supported SM", "[cuda][nvrtc]") {
  const auto& archs = nvrtc().archs;
  REQUIRE(!archs.empty());
  for (int sm : {archs.front(), archs.back()})
    for (const auto& k : vgpu::kernels::builtin_cuda_kernels()) {
      INFO(k.name << " for sm_" << sm);
      vgpu::KernelSource s;
      s.name = std::string(k.name);
      set_cuda(s, std::string(k.source), std::string(k.entry));
      vgpu::CompileOptions o;
      o.workgroup_size = {256, 1, 1};
      CHECK(!vgpu::cuda::compile_cuda(nvrtc(), s, o, sm).empty());
    }
}

TEST_CASE("an SM newer than NVRTC knows falls back to PTX", "[cuda][nvrtc]") {
  vgpu::KernelSource s;
  s.name = "axpy";
  set_cuda(s, std::string(vgpu::kernels::builtin_cuda("axpy").source), "vgpu_axpy");
  const auto image = vgpu::cuda::compile_cuda(nvrtc(), s, vgpu::CompileOptions{}, 999);
  const std::string text(image.begin(), image.end());
  CHECK(text.find(".entry vgpu_axpy") != std::string::npos);
  CHECK(image.back() == 0);
}

TEST_CASE("a CUDA syntax error is a compile_error with NVRTC's log", "[cuda][nvrtc]") {
  vgpu::KernelSource s;
  s.name = "test.broken";
  set_cuda(s, "extern \"C\" __global__ void f(float* x) {\n  x[0] = undefined_thing;\n}\n", "f");
  REQUIRE_VGPU_ERROR(compile_error, "CUDA kernel 'test.broken' failed to compile:\n",
                     vgpu::cuda::compile_cuda(nvrtc(), s, vgpu::CompileOptions{}, 90));
  REQUIRE_VGPU_ERROR(compile_error, "undefined_thing",
                     vgpu::cuda::compile_cuda(nvrtc(), s, vgpu::CompileOptions{}, 90));
}

// Two kernels in one complete .cu text; static_asserts fail the compile unless every spec
// constant arrived as the macro of its name with its exact value.
const char* kTwoKernels = R"(
extern "C" __global__ void vgpu_test_first(float* x) {
  static_assert(COUNT == 7u, "COUNT");
  static_assert(FLAG == 1, "FLAG");
  static_assert(NEG == -3, "NEG");
  static_assert(SCALE == 0.1f, "SCALE");
  static_assert(WHOLE == 2.0f, "WHOLE");
  x[threadIdx.x] = SCALE * COUNT;
}
extern "C" __global__ void vgpu_test_second(float* x) { x[threadIdx.x] = WHOLE + NEG; }
)";

vgpu::CompileOptions two_kernel_options() {
  vgpu::CompileOptions o;
  o.specialize("COUNT", 7u).specialize("FLAG", true).specialize("NEG", -3).specialize("SCALE", 0.1f);
  o.specialize("WHOLE", 2.0f);
  return o;
}

TEST_CASE("CUDA: spec constants by name are -D macros of their exact value", "[cuda][nvrtc][spec]") {
  CHECK(vgpu::cuda::cuda_literal(vgpu::SpecValue::of(true)) == "1");
  CHECK(vgpu::cuda::cuda_literal(vgpu::SpecValue::of(false)) == "0");
  CHECK(vgpu::cuda::cuda_literal(vgpu::SpecValue::of(-3)) == "(-3)");
  CHECK(vgpu::cuda::cuda_literal(vgpu::SpecValue::of(7u)) == "7u");
  CHECK(vgpu::cuda::cuda_literal(vgpu::SpecValue::of(1.5f)) == "1.5f");
  CHECK(vgpu::cuda::cuda_literal(vgpu::SpecValue::of(2.0f)) == "2.0f");
  CHECK(vgpu::cuda::cuda_literal(vgpu::SpecValue::of(0.1f)) == "0.100000001f");
  vgpu::KernelSource s;
  s.name = "test.two_kernels";
  set_cuda(s, kTwoKernels, "vgpu_test_second");
  // PTX (an SM newer than NVRTC knows) shows both entries; without the constants it fails.
  const auto image = vgpu::cuda::compile_cuda(nvrtc(), s, two_kernel_options(), 999);
  const std::string text(image.begin(), image.end());
  CHECK(text.find(".entry vgpu_test_first") != std::string::npos);
  CHECK(text.find(".entry vgpu_test_second") != std::string::npos);
  CHECK(!vgpu::cuda::compile_cuda(nvrtc(), s, two_kernel_options(), 90).empty());
  vgpu::CompileOptions wrong = two_kernel_options();
  wrong.specialize("COUNT", 8u);
  REQUIRE_VGPU_ERROR(compile_error, "COUNT", vgpu::cuda::compile_cuda(nvrtc(), s, wrong, 90));
}

TEST_CASE("CUDA: a spec constant by id, or by a name that is no macro, is refused", "[cuda][nvrtc][spec][errors]") {
  vgpu::KernelSource s;
  s.name = "test.two_kernels";
  set_cuda(s, kTwoKernels, "vgpu_test_first");
  vgpu::CompileOptions by_id = two_kernel_options();
  by_id.specialize(3u, 1u);
  REQUIRE_VGPU_ERROR(not_supported, "sets specialization constant id 3, but CUDA C has no constant ids",
                     vgpu::cuda::compile_cuda(nvrtc(), s, by_id, 90));
  vgpu::CompileOptions bad_name;
  bad_name.specialize("2x", 1u);
  REQUIRE_VGPU_ERROR(invalid_argument, "'2x', which is no C identifier",
                     vgpu::cuda::compile_cuda(nvrtc(), s, bad_name, 90));
  vgpu::CompileOptions twice = two_kernel_options();
  twice.defines["COUNT"] = "7u";
  REQUIRE_VGPU_ERROR(invalid_argument, "sets 'COUNT' both as a specialization constant and as a define",
                     vgpu::cuda::compile_cuda(nvrtc(), s, twice, 90));
}

}  // namespace vgpu_test

int main(int argc, char* argv[]) {
  std::string why;
  if (!vgpu::cuda::load_nvrtc(&why)) {
    std::printf("SKIPPED cuda_nvrtc tests: %s\n", why.c_str());
    return 77;
  }
  return vgpu_test::run_catch_session(argc, argv);
}
