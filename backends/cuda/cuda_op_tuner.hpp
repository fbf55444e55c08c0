// SPDX-License-Identifier: Apache-2.0
// backends/cuda/cuda_op_tuner.hpp — how the CUDA backend runs the built-in ops.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "vgpu/backend/op_tuning.hpp"

namespace vgpu::cuda {

/// One tiling of core/kernels/cuda/matmul.cu: a BM×BN tile of C per block, K in steps of BK,
/// TM×TN per thread, lanes grouped into WM×WN warp sub-tiles (0: the whole block is one group,
/// the block-strided layout), min_blocks blocks per SM for __launch_bounds__ and stages cp.async
/// pipeline stages on the fast path (0: the register-prefetch double buffer).
struct CudaMatmulTiling {
  std::uint32_t bm = 0, bn = 0, bk = 0, tm = 0, tn = 0, wm = 0, wn = 0, min_blocks = 2, stages = 0;

  /// Returns "BMxBNxBKxTMxTN", with "wWMxWN" appended for a warp-tiled one and "sS" for a
  /// pipelined one: the form
  /// VGPU_MATMUL_TILING and OpTuning::variant take.
  std::string name() const;
  /// Returns the block size, defines (exactly those of its VGPU_CUDA_PRECOMPILED entry), work
  /// per block and variant name of this tiling.
  OpTuning tuning() const;
  /// Returns the blocks an m×n C takes with this tiling.
  std::uint64_t grid(std::uint64_t m, std::uint64_t n) const;
  friend bool operator==(const CudaMatmulTiling&, const CudaMatmulTiling&) = default;
};

/// One tiling of a tensor-core matmul: of core/kernels/cuda/matmul_mma.cu (mma.sync, sm_80+) on
/// 16-bit operands or, where tf32, on float32 operands in TF32: a BM×BN tile of C per block, K in
/// steps of BK through stages pipeline stages, one WM×WN sub-tile per warp; or, where wgmma, of
/// core/kernels/cuda/matmul_wgmma.cu (warpgroup MMA, sm_90 only) on 16-bit operands: a 128×BN
/// tile, two warpgroups of 64×BN (wm 64, wn BN), K in steps of 64 through stages stages, copied
/// by those warpgroups or, where specialized, by a third one.
struct CudaMmaTiling {
  std::uint32_t bm = 0, bn = 0, bk = 0, wm = 0, wn = 0, stages = 0;
  bool tf32 = false;
  bool wgmma = false;
  bool specialized = false;

  /// Returns "mmaBMxBNxBKwWMxWNsS" ("tf32_BMx…" for a TF32 one, "wgmmaBMxBNxBKsS" for a warpgroup
  /// one, "…ws" warp-specialized), the variant name (also what VGPU_MATMUL_TILING may force).
  std::string name() const;
  /// Returns the block size, defines (exactly those of its VGPU_CUDA_PRECOMPILED entries), work
  /// per block, code and variant name of this tiling for operands of dtype (f16 or bf16; a TF32
  /// tiling: f32).
  OpTuning tuning(DType dtype) const;
  /// Returns the blocks an m×n C takes with this tiling.
  std::uint64_t grid(std::uint64_t m, std::uint64_t n) const;
  friend bool operator==(const CudaMmaTiling&, const CudaMmaTiling&) = default;
};

/// Returns every mma.sync tiling of 16-bit operands the tuner may pick or offer (each
/// precompiled in L3 for f16 and bf16).
std::span<const CudaMmaTiling> cuda_mma_tilings();
/// Returns every warpgroup-MMA tiling of 16-bit operands the tuner may pick or offer on sm_90
/// (each precompiled in L3, sm_90a SASS, for f16 and bf16).
std::span<const CudaMmaTiling> cuda_wgmma_tilings();
/// Returns every TF32 tiling the tuner may pick or offer for matmul_tf32 (each precompiled in L3).
std::span<const CudaMmaTiling> cuda_tf32_tilings();

/// Returns whether info's GPU runs matmul_mma.cu (compute capability 8.0 or later: mma.sync
/// on f16, bf16 and tf32, cp.async, ldmatrix), read from its "sm_XY" feature.
bool has_mma_f16(const DeviceInfo& info) noexcept;
/// Returns whether info's GPU runs matmul_wgmma.cu: compute capability 9.0 exactly (wgmma and
/// its descriptors are sm_90a instructions, absent from later architectures).
bool has_wgmma(const DeviceInfo& info) noexcept;

/// Returns every CUDA matmul tiling the tuner may pick or offer (each precompiled in L3,
/// cmake/VgpuCuda.cmake's VGPU_CUDA_PRECOMPILED).
std::span<const CudaMatmulTiling> cuda_matmul_tilings();

/// Returns the tiling named name (CudaMatmulTiling::name()); throws invalid_argument listing the
/// CUDA names for any other text.
CudaMatmulTiling cuda_matmul_tiling(std::string_view name);

/// Returns the tiling the rule picks for an m×n C on a GPU of sms SMs (no override, no measuring).
CudaMatmulTiling cuda_matmul_choice(std::uint64_t m, std::uint64_t n, std::uint32_t sms);

/// Returns the CUDA backend's OpTuner: matmul's tiling follows the shape and the SM count (or is
/// always forced_matmul, VGPU_MATMUL_TILING's CUDA name; an unknown one fails each matmul plan);
/// a matmul of f16 or bf16 operands on sm_80+ takes a tensor-core tiling (on sm_90 a warpgroup
/// one where its grid fills the SMs, cuda_wgmma_tilings, else cuda_mma_tilings; forced_matmul
/// where it names one), a float32 one with TF32 allowed a TF32 tiling
/// (cuda_tf32_tilings), and any other GPU the float32 tilings; every other op runs as its GLSL
/// original does. Immutable; safe from any thread.
std::shared_ptr<const OpTuner> cuda_op_tuner(std::string_view forced_matmul = {});
/// Returns cuda_op_tuner as configured (VGPU_MATMUL_TILING, read now): the CUDA backend's rule,
/// which its op_tuner() and the runtime's registry both return.
std::shared_ptr<const OpTuner> configured_cuda_op_tuner();

}  // namespace vgpu::cuda
