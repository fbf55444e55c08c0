// SPDX-License-Identifier: Apache-2.0
// vgpu/backend/op_tuning.hpp — the hook through which a backend tunes the built-in ops.
// Backend-author interface. core/runtime/kernel_cache/ops.cpp builds each built-in's plan (sources in every
// dialect vgpu ships, bindings, tensors) and asks the device's OpTuner how to run it at the
// shape asked: workgroup size, defines, the work one workgroup covers, or its own code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/device_info.hpp"
#include "vgpu/kernel_source.hpp"

namespace vgpu {

/// One built-in op call as a backend tunes it.
struct OpShape {
  std::string_view op;                ///< one of ops::names(): "matmul", "axpy", "add", …
  std::uint64_t m = 1, k = 1, n = 1;  ///< matmul: M, K, N; softmax_rows: rows (m), cols (n); 1-D ops: n
  /// The arguments' dtype. A tuner may answer a 16-bit one (f16, bf16) with variants that read
  /// and write it themselves (OpTuning::native_dtype); any other variant runs on float32
  /// twins of the arguments between conversion steps (core/runtime/kernel_cache/dtype_plan.hpp).
  DType dtype = DType::f32;
  /// matmul on float32 through the op "matmul_tf32": the caller allows TF32 arithmetic (inputs
  /// rounded to 10 mantissa bits, float32 accumulation). A tuner may answer with variants marked
  /// OpTuning::tf32; any other variant computes in float32, which the allowance also covers.
  bool tf32 = false;
};

/// How one device runs one built-in op at one shape.
struct OpTuning {
  CompileOptions options;         ///< workgroup size (always set: ops compute group counts from it) and defines
  std::uint64_t per_group_x = 1;  ///< work one workgroup covers: elements (1-D ops, reduce block), C columns (matmul)
  std::uint64_t per_group_y = 1;  ///< C rows one workgroup covers (matmul; 1 elsewhere)
  /// matmul on the GLSL kernel: K slices whose partial products a second step adds (split-K,
  /// for K ≫ M·N); 1: none. Other kernels must leave it 1.
  std::uint32_t split_k = 1;
  /// matmul: the longest K slice one workgroup may walk on this device, so that its loops stay
  /// under the driver's loop limit (DeviceLimits::max_loop_iterations), a multiple of 16; the
  /// plan then splits K into at least ⌈K / max_k_slice⌉ slices (or refuses the shape). 0: any.
  std::uint32_t max_k_slice = 0;
  /// The backend's own code for the op, for a dialect vgpu's built-ins do not ship (it joins
  /// the built-in's sources and must follow core/kernels/kernel_abi.hpp); empty for the rest.
  std::optional<DialectSource> code;
  /// matmul: the variant's code for stacks (MatmulBatchParams, workgroup z = one product) where
  /// that is not `code` built with VGPU_MM_BATCH=1 — a CPU built-in, which takes no defines,
  /// names its batched entry here. Empty: `code` serves both.
  std::optional<DialectSource> batched_code;
  /// The variant's name, unique among the candidates of one op on one backend (matmul:
  /// "BMxBNxBKxTMxTN" or "naive"); measured choices are stored under it. Empty: unnamed.
  std::string variant;
  /// The variant's kernel reads and writes OpShape::dtype itself (a tensor-core matmul on
  /// 16-bit operands): its plan binds the arguments as they are, with no conversion steps, and
  /// its code (which it must bring) is the plan's only source. Only matmul takes such variants.
  bool native_dtype = false;
  /// The variant multiplies float32 operands in TF32 (offered only where OpShape::tf32 allows
  /// it): like native_dtype, its code (which it must bring) is the plan's only source.
  bool tf32 = false;
  /// A DeviceInfo::features name the variant's code uses (empty: none): the runtime drops the
  /// variant where that feature's truth test (vgpu/feature_check.hpp) did not pass.
  std::string feature;
};

/// A backend's tuning of the built-in ops. Thread-safety: immutable, tune() is safe from any thread.
class OpTuner {
 public:
  virtual ~OpTuner() = default;
  /// Returns how device runs shape.op; throws not_supported for an op the backend lacks.
  virtual OpTuning tune(const OpShape& shape, const DeviceInfo& device) const = 0;
  /// Returns the variants of shape.op worth measuring on device, tune()'s pick first, each
  /// with a distinct OpTuning::variant. One entry (the default) means: no measuring, the rule
  /// stands. The runtime times them once per device and size class and persists the fastest.
  virtual std::vector<OpTuning> candidates(const OpShape& shape, const DeviceInfo& device) const {
    return {tune(shape, device)};
  }
};

}  // namespace vgpu
