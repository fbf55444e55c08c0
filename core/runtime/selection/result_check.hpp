// SPDX-License-Identifier: Apache-2.0
// core/runtime/selection/result_check.hpp — is a call's result right? References of one call's outputs and the
// comparison with them, for calibration (calibration.hpp: a device that computes wrong is never
// chosen) and the measured variant choice (variant_choice.hpp: nor is such a tiling). Issue 29:
// Mesa's software devices stop shader loops after 65 535 iterations, and calibration timed their
// wrong results as the fastest. Two kinds of reference:
// - a built-in op: its exact value in double precision at sampled output elements (the cost stays
//   bounded at any shape: at most ~4M multiply-adds for matmul), each with the op's tolerance from
//   vgpu/tolerance.hpp, the bounds the conformance suite holds every device to (matmul: the
//   tighter of its worst case and the probabilistic bound for random inputs, matmul_random(),
//   since the worst case allows 100% error at k ≈ 4·10⁶);
// - a user's op: every output element of the CPU device's run of its CPU dialect on the same
//   inputs, within kUserRelTolerance (integers exactly).
// Thread-safety: pure functions over their arguments.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "call_data.hpp"
#include "vgpu/kernel_plan.hpp"

namespace vgpu::detail::check {

/// A user kernel's float results may differ from its CPU dialect's by this much relative to
/// |reference| + the mean |reference| of that output tensor (summation order, fused multiply-adds
/// and GPU transcendentals differ; a loop that stopped early or an unwritten tile is off by far
/// more). Integer results must be equal.
inline constexpr double kUserRelTolerance = 1e-3;

/// The relative tolerance for results of dtype: kUserRelTolerance, plus for a 16-bit result one
/// unit in its last place (each side rounded once may land on either neighbour: 2u relative,
/// f16 2⁻¹⁰ ≈ 9.8e-4, bf16 2⁻⁷ ≈ 7.8e-3).
constexpr double user_rel_tolerance(DType dtype) noexcept {
  return kUserRelTolerance + (dtype == DType::bf16 ? 0x1p-7 : dtype == DType::f16 ? 0x1p-10 : 0.0);
}

/// The most output elements a built-in's reference samples, and its budget of multiply-adds
/// (matmul: elements × k ≤ kSampleFlops, at least kMinSamples elements).
inline constexpr std::uint64_t kMaxSamples = 4096, kMinSamples = 4, kSampleFlops = 1ull << 22;

/// One output element's exact value and the largest error allowed for it.
struct Expected {
  std::uint32_t arg = 0;    // index in CallData::args (an output)
  std::uint64_t index = 0;  // element index in that tensor, row-major
  double value = 0, bound = 0;
};

/// One output tensor of a reference run: its element count and bytes (elements of dtype).
struct Output {
  std::uint32_t arg = 0;
  DType dtype = DType::f32;
  std::uint64_t count = 0;
  std::vector<unsigned char> bytes;
};

/// What one call's outputs must hold: sampled exact values (a built-in) or a reference run's
/// outputs (a user's op), and what it is (for messages).
struct Reference {
  std::vector<Expected> expected;
  std::vector<Output> outputs;
  std::string against;  // "a double-precision reference", "cpu:0's result of its CPU dialect"
};

/// The outcome of comparing one call's outputs with a Reference.
struct Outcome {
  std::uint64_t checked = 0, bad = 0;
  double worst_ratio = 0;    // the largest |got − want| / bound (kErrorCap for a NaN or infinite one)
  double max_rel_error = 0;  // the largest |got − want| / |want| among the bad elements
  std::string worst;         // where the worst ratio is: "C[3,7]: got 1, want 0.2501 ± 3.1e-07"
  std::string against;       // the Reference's
  bool ok() const noexcept { return bad == 0; }
  /// "max rel error 7.5e-01; 17 of 17 checked elements out of tolerance against …; worst C[3,7]: …"
  std::string describe() const;
};

/// The cap of Outcome::worst_ratio (JSON has no infinity).
inline constexpr double kErrorCap = 1e300;

/// Returns the reference of built-in op (ops::names()) for plan's outputs on inputs (the call's
/// data before the call: a read_write tensor still holds its input), or nothing when op is no
/// built-in or plan is not its built-in plan (another name, other tensors: a user's factory).
std::optional<Reference> builtin_reference(const std::string& op, const KernelPlan& plan, const CallData& inputs);

/// Returns result's outputs (after a call of plan on the reference device) as the reference,
/// described as against.
Reference run_reference(const KernelPlan& plan, const CallData& result, std::string against);

/// Compares the outputs got holds after a call of plan with ref; plan must have the tensors ref
/// was made for (same signature).
Outcome compare(const Reference& ref, const KernelPlan& plan, const CallData& got);

}  // namespace vgpu::detail::check
