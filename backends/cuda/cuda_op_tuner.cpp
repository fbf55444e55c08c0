// SPDX-License-Identifier: Apache-2.0
// backends/cuda/cuda_op_tuner.cpp — the CUDA built-ins' tilings. The CUDA ports
// (core/kernels/cuda/*.cu) mirror the GLSL kernels' block sizes and reduce block, except
// matmul, whose tiling depends on the shape and the GPU.
#include "cuda_op_tuner.hpp"

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "vgpu/config.hpp"
#include "vgpu/error.hpp"
#include "vgpu/kernels/cuda_source.hpp"
#include "vgpu/kernels/gpu_tuning.hpp"

namespace vgpu::cuda {
namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

// The SM of info's "sm_XY" feature (90 for "sm_90"); 0 when it names none or a malformed one.
unsigned sm_of(const DeviceInfo& info) noexcept {
  for (const std::string& f : info.features) {
    if (f.size() < 5 || f.rfind("sm_", 0) != 0) continue;
    unsigned sm = 0;
    for (std::size_t i = 3; i < f.size(); ++i) {
      if (f[i] < '0' || f[i] > '9') return 0;
      sm = sm * 10 + static_cast<unsigned>(f[i] - '0');
    }
    return sm;
  }
  return 0;
}

// The block-strided tilings the rule picks (measured on the H200: docs/benchmarks.md), then the
// warp-tiled ones (issue 16), offered as candidates for the measured choice. 256 threads each but
// 128x128x8x8x16 and 64x64x16x8x4 (128) and 64x64x16x8x8 (64). Every entry is also in
// cmake/VgpuCuda.cmake's VGPU_CUDA_PRECOMPILED (L3), with the same defines; keep them in step.
constexpr CudaMatmulTiling kLarge{128, 128, 8, 8, 8}, kWide{128, 64, 8, 8, 4}, kSmall{64, 64, 16, 4, 4};
// 8×8 per thread: 4 float4 shared-memory reads per 64 FMAs. (BK 16 spills ~72 bytes at the
// 128-register cap two blocks per SM impose; it halves the barriers.)
constexpr CudaMatmulTiling kWarp128{128, 128, 8, 8, 8, 32, 64}, kWarp128k16{128, 128, 16, 8, 8, 32, 64},
    kWarp128x64{128, 64, 8, 8, 4, 32, 32}, kWarp64{64, 64, 16, 4, 4, 16, 32};
// Mid sizes (N ≈ 1024-2048 on ~132 SMs): a 64×64 grid fills the GPU, but 4×4 per thread reads 2
// float4s per 16 FMAs; 8×8 (64 threads) or 8×4 (128) per thread in the same 64×64 block read less.
constexpr CudaMatmulTiling kWarp64t8x8{64, 64, 16, 8, 8, 32, 64}, kWarp64t8x4{64, 64, 16, 8, 4, 32, 32};
// 8×16 per thread: 6 float4 reads per 128 FMAs, a quarter less shared-memory traffic per FMA than
// 8×8, for ~220-230 registers: one 256-thread block per SM, or two 128-thread ones.
constexpr CudaMatmulTiling kWarp128x256{128, 256, 8, 8, 16, 32, 128, 1}, kWarp256x128{256, 128, 8, 16, 8, 64, 64, 1},
    kWarp128t128{128, 128, 8, 8, 16, 32, 128};
// 3-stage cp.async pipelines (issue 16: ncu showed the register-prefetch kernels stalling on
// global latency and barriers where cuBLAS's 256x128x8 3-stage kernel issues 87% of cycles):
// cuBLAS's tile and 4x2 warps of 64x64, and 128x128 with BK 16 (half the barriers), one
// 256-thread block per SM each (36.9 and 48 KB of shared memory).
constexpr CudaMatmulTiling kPipe256x128{256, 128, 8, 16, 8, 64, 64, 1, 3},
    kPipe128k16{128, 128, 16, 8, 8, 32, 64, 1, 3};
constexpr CudaMatmulTiling kTilings[] = {kLarge,       kWide,        kSmall,       kWarp128,    kWarp128k16,
                                         kWarp128x256, kWarp256x128, kWarp128t128, kWarp64t8x8, kWarp64t8x4,
                                         kWarp128x64,  kWarp64,      kPipe256x128, kPipe128k16};
// The order candidates() offers them in: the most work per shared-memory byte first, so the
// measured choice times the likeliest winners when only a few fit.
// The pipelined ones lead: they are the ones built to close the gap at large N (their 256-
// and 128-row tiles drop out below ~2048² by the grid rule, where they would leave SMs idle).
// Then the register-prefetch tilings the H200 measured fastest at 4096 (128x128x8x8x16w32x128)
// and 2048 (128x128x8x8x8w32x64), so that with kMaxCandidates the measured choice never loses
// them to the new ones.
constexpr CudaMatmulTiling kCandidateOrder[] = {kPipe256x128, kPipe128k16, kWarp128t128, kWarp128,    kWarp128x256,
                                                kWarp256x128, kWarp128k16, kWarp64t8x8,  kWarp64t8x4, kWarp128x64,
                                                kWarp64,      kLarge,      kWide,        kSmall};
static_assert(std::size(kCandidateOrder) == std::size(kTilings), "every tiling is a candidate somewhere");

// Tensor-core tilings of 16-bit operands (matmul_mma.cu). The rule's picks, largest first: 8
// warps of 64×32 in a 128×128 tile (2 stages: 37 KB of shared memory), then 4 warps of 64×32 in
// 128×64 and of 32×32 in 64×64 (3 stages) for grids that 128×128 tiles would leave short of the
// SMs. Then, for the measured choice only (the H200's first run had the rule's pick at 31–33 %
// of cuBLAS at 4096–8192), warps of 64×64 — half the fragment loads per mma — in 128×128 (4
// warps, 2 stages) and 128×256 (8 warps, BK 16, 3 stages: 43 KB).
constexpr CudaMmaTiling kMmaTilings[] = {{128, 128, 32, 64, 32, 2},
                                         {128, 64, 32, 64, 32, 3},
                                         {64, 64, 32, 32, 32, 3},
                                         {128, 128, 32, 64, 64, 2},
                                         {128, 256, 16, 64, 64, 3}};
// The same tiles for float32 operands in TF32 (matmul_tf32): BK 16 floats, the same shared memory
// (the 128×256 tile has no TF32 twin: BK 8 floats would halve the work per barrier).
constexpr CudaMmaTiling kTf32Tilings[] = {{128, 128, 16, 64, 32, 2, true},
                                          {128, 64, 16, 64, 32, 3, true},
                                          {64, 64, 16, 32, 32, 3, true},
                                          {128, 128, 16, 64, 64, 2, true}};
// Warpgroup-MMA tilings of 16-bit operands (matmul_wgmma.cu, sm_90 only): 128×256 (4 stages of
// 48 KB) and 128×128 (6 stages of 32 KB), 193 KB of dynamic shared memory each, both warpgroups
// copying and multiplying; and the same tiles warp-specialized (a third warpgroup copies,
// mbarriers instead of block barriers). On sm_90 the first two lead the set, so the rule picks
// them wherever their grid fills the SMs; mma.sync's 128×64 and 64×64 follow for smaller grids,
// then the candidates of the measured choice only.
constexpr CudaMmaTiling kHopperTilings[] = {{128, 256, 64, 64, 256, 4, false, true},
                                            {128, 128, 64, 64, 128, 6, false, true},
                                            {128, 64, 32, 64, 32, 3},
                                            {64, 64, 32, 32, 32, 3},
                                            {128, 256, 64, 64, 256, 4, false, true, true},
                                            {128, 128, 64, 64, 128, 6, false, true, true},
                                            {128, 128, 32, 64, 32, 2},
                                            {128, 128, 32, 64, 64, 2},
                                            {128, 256, 16, 64, 64, 3}};
// The rule (no measuring) picks among the first three of each set (sm_90: four); the rest are
// candidates of the measured choice only.
constexpr std::size_t kMmaRuleTilings = 3, kHopperRuleTilings = 4;

// Below this many multiply-adds a product is all launch cost: nothing worth measuring.
constexpr std::uint64_t kMeasureFrom = 256ull * 256 * 256;
// Candidates beside the rule's pick (the runtime times each once per device and size class).
constexpr std::size_t kMaxCandidates = 5;

class CudaOpTuner final : public OpTuner {
 public:
  explicit CudaOpTuner(std::string forced) : forced_(std::move(forced)) {}

  OpTuning tune(const OpShape& shape, const DeviceInfo& dev) const override {
    if (shape.op != "matmul") return kernels::builtin_gpu_tuning(shape);
    if (const auto set = tensor_core_set(shape, dev); !set.empty()) {
      if (forced_in(set)) return named(forced_, set).tuning(shape.dtype);
      return choice(shape.m, shape.n, dev.compute_units, set).tuning(shape.dtype);
    }
    // Parsed per plan so that a bad VGPU_MATMUL_TILING fails matmul with its message, not device discovery.
    if (!forced_.empty() && !forced_tensor_core()) return cuda_matmul_tiling(forced_).tuning();
    return cuda_matmul_choice(shape.m, shape.n, dev.compute_units).tuning();
  }

  // The rule's pick, then the other tilings whose grid still covers ~all SMs (a grid below 90%
  // of them leaves SMs idle, which no tile shape wins back), in kCandidateOrder (tensor-core
  // tilings: largest first). A forced tiling or a small product: the rule alone.
  std::vector<OpTuning> candidates(const OpShape& shape, const DeviceInfo& dev) const override {
    std::vector<OpTuning> out{tune(shape, dev)};
    if (shape.op != "matmul" || !forced_.empty() || shape.m * shape.n * shape.k < kMeasureFrom) return out;
    const std::uint64_t sms = std::max<std::uint32_t>(dev.compute_units, 1);
    if (const auto set = tensor_core_set(shape, dev); !set.empty()) {
      for (const CudaMmaTiling& c : set)
        if (c.name() != out.front().variant && c.grid(shape.m, shape.n) * 10 >= sms * 9)
          out.push_back(c.tuning(shape.dtype));
      return out;
    }
    for (const CudaMatmulTiling& c : kCandidateOrder) {
      if (out.size() >= kMaxCandidates) break;
      if (c.name() == out.front().variant || c.grid(shape.m, shape.n) * 10 < sms * 9) continue;
      out.push_back(c.tuning());
    }
    return out;
  }

 private:
  // The tensor-core tilings for shape on dev: the 16-bit ones for a 16-bit matmul, the TF32 ones
  // for a float32 matmul with TF32 allowed (both on sm_80+); none otherwise.
  static std::span<const CudaMmaTiling> tensor_core_set(const OpShape& shape, const DeviceInfo& dev) {
    if (!has_mma_f16(dev)) return {};
    if (shape.dtype == DType::f16 || shape.dtype == DType::bf16) {
      if (has_wgmma(dev)) return kHopperTilings;
      return kMmaTilings;
    }
    if (shape.dtype == DType::f32 && shape.tf32) return kTf32Tilings;
    return {};
  }
  // VGPU_MATMUL_TILING names a tensor-core tiling ("mma…" and "wgmma…" force 16-bit matmuls,
  // "tf32…" TF32 ones); the other matmuls keep their rule.
  bool forced_tensor_core() const {
    return forced_.rfind("mma", 0) == 0 || forced_.rfind("wgmma", 0) == 0 || forced_.rfind("tf32", 0) == 0;
  }
  bool forced_in(std::span<const CudaMmaTiling> set) const {
    if (forced_.empty()) return false;
    if (set.front().tf32) return forced_.rfind("tf32", 0) == 0;
    return forced_.rfind("mma", 0) == 0 || forced_.rfind("wgmma", 0) == 0;
  }
  static CudaMmaTiling named(std::string_view name, std::span<const CudaMmaTiling> set) {
    std::string known;
    for (const CudaMmaTiling& t : set) {
      if (t.name() == name) return t;
      known += (known.empty() ? "" : ", ") + t.name();
    }
    const bool wgmma = set.front().wgmma;
    fail(ErrorCategory::invalid_argument,
         "VGPU_MATMUL_TILING='" + std::string(name) + "' is not a CUDA " + (set.front().tf32 ? "TF32" : "tensor-core") +
             " matmul tiling" +
             (wgmma || name.rfind("wgmma", 0) != 0 ? "" : " of this GPU (wgmma tilings run on sm_90 only)") + ".",
         "set it to one of " + known + " (" + (set.front().tf32 ? "float32 with TF32 allowed" : "16-bit operands") +
             (wgmma ? " on this sm_90 GPU" : " on sm_80+") + "), or unset it to let the tuner choose.");
  }
  // The largest tile whose grid still gives every SM a block (set: largest first), as
  // cuda_matmul_choice does.
  static CudaMmaTiling choice(std::uint64_t m, std::uint64_t n, std::uint32_t sms_in,
                              std::span<const CudaMmaTiling> all) {
    const std::uint64_t sms = std::max<std::uint32_t>(sms_in, 1);
    const std::size_t rule = all.front().wgmma ? kHopperRuleTilings : kMmaRuleTilings;
    const std::span<const CudaMmaTiling> set = all.first(std::min(all.size(), rule));
    for (const CudaMmaTiling& c : set)
      if (c.grid(m, n) >= sms) return c;
    return set.back();
  }

  std::string forced_;
};

}  // namespace

std::string CudaMatmulTiling::name() const {
  std::string s = std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + "x" + std::to_string(tm) +
                  "x" + std::to_string(tn);
  if (wm != 0) s += "w" + std::to_string(wm) + "x" + std::to_string(wn);
  if (stages != 0) s += "s" + std::to_string(stages);
  return s;
}

OpTuning CudaMatmulTiling::tuning() const {
  OpTuning t;
  t.per_group_x = bn;
  t.per_group_y = bm;
  t.options.workgroup_size = {bn / tn, bm / tm, 1};
  t.options.defines = {{"VGPU_MM_BM", std::to_string(bm)},
                       {"VGPU_MM_BN", std::to_string(bn)},
                       {"VGPU_MM_BK", std::to_string(bk)},
                       {"VGPU_MM_TM", std::to_string(tm)},
                       {"VGPU_MM_TN", std::to_string(tn)}};
  // Only what differs from matmul.cu's defaults, so the block-strided tilings keep their L1/L2/L3 keys.
  if (wm != 0) {
    t.options.defines["VGPU_MM_WM"] = std::to_string(wm);
    t.options.defines["VGPU_MM_WN"] = std::to_string(wn);
  }
  if (min_blocks != 2) t.options.defines["VGPU_MM_MIN_BLOCKS"] = std::to_string(min_blocks);
  if (stages != 0) t.options.defines["VGPU_MM_STAGES"] = std::to_string(stages);
  t.variant = name();
  return t;
}

std::uint64_t CudaMatmulTiling::grid(std::uint64_t m, std::uint64_t n) const {
  return ceil_div(m, bm) * ceil_div(n, bn);
}

std::span<const CudaMatmulTiling> cuda_matmul_tilings() { return kTilings; }

std::string CudaMmaTiling::name() const {
  if (wgmma)
    return "wgmma" + std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + "s" +
           std::to_string(stages) + (specialized ? "ws" : "");
  return (tf32 ? "tf32_" : "mma") + std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + "w" +
         std::to_string(wm) + "x" + std::to_string(wn) + "s" + std::to_string(stages);
}

OpTuning CudaMmaTiling::tuning(DType dtype) const {
  OpTuning t;
  t.per_group_x = bn;
  t.per_group_y = bm;
  if (wgmma) {  // matmul_wgmma.cu: two (specialized: three) warpgroups, its tile and pipeline depth as defines
    t.options.workgroup_size = {specialized ? 384u : 256u, 1, 1};
    t.options.defines = {{"VGPU_WG_BN", std::to_string(bn)},
                         {"VGPU_WG_STAGES", std::to_string(stages)},
                         {"VGPU_WG_BF16", dtype == DType::bf16 ? "1" : "0"}};
    if (specialized) t.options.defines["VGPU_WG_SPECIALIZED"] = "1";
    const auto& cu = kernels::builtin_cuda("matmul_wgmma");
    t.code = DialectSource{std::string(dialect::cuda), std::string(cu.source), std::string(cu.entry), {}, {}};
    t.native_dtype = true;
    t.variant = name();
    return t;
  }
  t.options.workgroup_size = {(bm / wm) * (bn / wn) * 32, 1, 1};
  t.options.defines = {{"VGPU_MMA_BM", std::to_string(bm)}, {"VGPU_MMA_BN", std::to_string(bn)},
                       {"VGPU_MMA_BK", std::to_string(bk)}, {"VGPU_MMA_WM", std::to_string(wm)},
                       {"VGPU_MMA_WN", std::to_string(wn)}, {"VGPU_MMA_STAGES", std::to_string(stages)}};
  if (tf32)
    t.options.defines["VGPU_MMA_TF32"] = "1";
  else
    t.options.defines["VGPU_MMA_BF16"] = dtype == DType::bf16 ? "1" : "0";
  const auto& cu = kernels::builtin_cuda("matmul_mma");
  t.code = DialectSource{std::string(dialect::cuda), std::string(cu.source), std::string(cu.entry), {}, {}};
  t.native_dtype = !tf32;
  t.tf32 = tf32;
  t.variant = name();
  return t;
}

std::uint64_t CudaMmaTiling::grid(std::uint64_t m, std::uint64_t n) const { return ceil_div(m, bm) * ceil_div(n, bn); }

std::span<const CudaMmaTiling> cuda_mma_tilings() { return kMmaTilings; }

std::span<const CudaMmaTiling> cuda_tf32_tilings() { return kTf32Tilings; }

std::span<const CudaMmaTiling> cuda_wgmma_tilings() {
  static const std::vector<CudaMmaTiling> wgmma = [] {
    std::vector<CudaMmaTiling> out;
    for (const CudaMmaTiling& t : kHopperTilings)
      if (t.wgmma) out.push_back(t);
    return out;
  }();
  return wgmma;
}

bool has_mma_f16(const DeviceInfo& info) noexcept { return sm_of(info) >= 80; }

bool has_wgmma(const DeviceInfo& info) noexcept { return sm_of(info) == 90; }

CudaMatmulTiling cuda_matmul_tiling(std::string_view name) {
  std::string known;
  for (const CudaMatmulTiling& t : kTilings) {
    if (t.name() == name) return t;
    known += (known.empty() ? "" : ", ") + t.name();
  }
  fail(ErrorCategory::invalid_argument, "VGPU_MATMUL_TILING='" + std::string(name) + "' is not a CUDA matmul tiling.",
       "set it to one of " + known + " (the CUDA tilings), or unset it to let the tuner choose.");
}

// The largest tile that still gives every SM a block: big tiles do the most work per byte of
// shared memory, but a grid smaller than the GPU leaves SMs idle (1024² with 128×128 tiles is
// 64 blocks for an H200's 132 SMs).
CudaMatmulTiling cuda_matmul_choice(std::uint64_t m, std::uint64_t n, std::uint32_t sms_in) {
  const std::uint64_t sms = std::max<std::uint32_t>(sms_in, 1);
  for (const CudaMatmulTiling& c : {kLarge, kWide})
    if (c.grid(m, n) >= sms) return c;
  return kSmall;
}

std::shared_ptr<const OpTuner> cuda_op_tuner(std::string_view forced_matmul) {
  static const auto tuner = std::make_shared<const CudaOpTuner>(std::string());
  if (forced_matmul.empty()) return tuner;
  return std::make_shared<const CudaOpTuner>(std::string(forced_matmul));
}

std::shared_ptr<const OpTuner> configured_cuda_op_tuner() { return cuda_op_tuner(config().matmul_tiling); }

}  // namespace vgpu::cuda
