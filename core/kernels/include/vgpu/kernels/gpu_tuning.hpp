// SPDX-License-Identifier: Apache-2.0
// core/kernels/gpu_tuning.hpp — how the GLSL built-ins (core/kernels/glsl) and their CUDA
// ports (core/kernels/cuda) are meant to be run: the facts of their code, for the backends'
// OpTuners (Vulkan and OpenGL use it as is, CUDA for every op but matmul).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "vgpu/backend/op_tuning.hpp"

namespace vgpu::kernels {

/// Returns the workgroup size, defines and work per group the GPU built-ins take for shape.op;
/// throws not_supported for an unknown op.
OpTuning builtin_gpu_tuning(const OpShape& shape);

/// One variant of core/kernels/glsl/matmul.comp: a BM×BN tile of C per workgroup, K in steps
/// of BK, TM×TN per invocation; naive: one invocation per element of C (16×16 workgroup).
struct GlslMatmulTiling {
  std::uint32_t bm = 16, bn = 16, bk = 0, tm = 1, tn = 1;
  bool naive = true;

  /// Returns "naive" or "BMxBNxBKxTMxTN", the form VGPU_MATMUL_TILING takes.
  std::string name() const;
  /// Returns the workgroup size, defines and work per group of this variant.
  OpTuning tuning() const;
  /// Returns the shared memory the variant declares (matmul.comp's As and Bs), in bytes.
  std::uint64_t shared_bytes() const;
  /// Returns whether device can run the variant (its shared memory and workgroup fit the limits).
  bool fits(const DeviceInfo& device) const;
  /// Returns the loop iterations one invocation runs per step of K (BK elements; naive: one),
  /// counting matmul.comp's loops as if none were unrolled, each one more for its exit test.
  std::uint64_t loops_per_step() const;
  /// Returns the loop iterations one invocation runs besides its steps of K (same counting).
  std::uint64_t loops_fixed() const;
  /// Returns the longest K slice (a multiple of 16) whose loops fit budget iterations per
  /// invocation; 0 when not even 16 do.
  std::uint32_t max_k_slice(std::uint64_t budget) const;
  friend bool operator==(const GlslMatmulTiling&, const GlslMatmulTiling&) = default;
};

/// Returns the loop iterations a built-in's invocation may run on device in all: its driver's
/// limit (DeviceLimits::max_loop_iterations) less 1/64 for loops a compiler may count otherwise
/// than the kernels' own count; 0 when the device has no limit.
std::uint64_t loop_budget(const DeviceInfo& device);

/// Returns every GLSL matmul variant the tuner may pick (each precompiled in L3, cmake/VgpuGlsl.cmake).
std::span<const GlslMatmulTiling> glsl_matmul_tilings();

/// Returns the variant named "naive" or "BMxBNxBKxTMxTN"; throws invalid_argument (with the
/// list of known ones) for any other text. (The tuner also refuses one that does not fit.)
GlslMatmulTiling glsl_matmul_tiling(std::string_view name);

/// Returns the variant the tuner picks for an M×K·K×N product on device (no override).
GlslMatmulTiling glsl_matmul_choice(std::uint64_t m, std::uint64_t k, std::uint64_t n, const DeviceInfo& device);

/// Returns the K slices (split-K, OpTuning::split_k) the tiled kernel runs an M×K·K×N product
/// in on device: more than 1 only for K ≫ M, N where the tiled grid would leave units idle.
std::uint32_t glsl_matmul_split_k(std::uint64_t m, std::uint64_t k, std::uint64_t n, const DeviceInfo& device);

/// Returns the OpTuner that runs every built-in as builtin_gpu_tuning says and matmul as
/// glsl_matmul_choice says, or always as forced_matmul names (VGPU_MATMUL_TILING; empty: no
/// override; an unknown name fails each matmul plan, not the device). Vulkan and OpenGL use it.
std::shared_ptr<const OpTuner> gpu_builtin_tuner(std::string_view forced_matmul = {});
/// Returns gpu_builtin_tuner as configured (VGPU_MATMUL_TILING, read now): the Vulkan and
/// OpenGL backends' rule, which their op_tuner() and the runtime's registry both return.
std::shared_ptr<const OpTuner> configured_gpu_builtin_tuner();

/// FOR TESTS (tests/selection/variant_choice_test.cpp; not exported from libvgpu): on, the tuner offers matmul
/// candidates on software devices too and at any work above the naive kernel's, so lavapipe/llvmpipe can exercise
/// measured variant choice. Thread-safety: any thread; plans made after see it.
void set_software_candidates(bool on) noexcept;

}  // namespace vgpu::kernels
