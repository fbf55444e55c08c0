// SPDX-License-Identifier: Apache-2.0
// vgpu/feature_check.hpp — capability truth tests: before vgpu lets a kernel use a feature a
// driver advertises (16-bit floats, 8-bit integers, 16- and 8-bit storage, subgroup
// arithmetic, cooperative matrices), a tiny probe kernel checks that the feature computes right on that device
// (drivers have advertised features they get wrong). The verdict is kept per device fingerprint
// in the runtime's L2 store (a later process reads it instead of probing), shown by vgpu-probe,
// and a kernel that declares the SPIR-V capability of a feature found wrong is refused with
// not_supported and one warning (docs/embedding.md, "Capabilities"). Features vgpu has no probe
// for are not checked. Thread-safety: safe from any thread (verdicts are memoised under a lock;
// two threads may probe one feature at once, and the first stored wins).
#pragma once

#include "vgpu/export.hpp"

#include <string>
#include <vector>

#include "vgpu/device.hpp"

namespace vgpu {

/// What a feature's truth test found.
enum class FeatureVerdict {
  passed,  ///< the probe computed the expected values
  wrong,   ///< the probe ran and computed something else: the feature is not used
  failed,  ///< the probe could not compile or run (the error is in the note): the feature is not used
};

/// Returns "passed", "wrong" or "failed".
VGPU_API const char* to_string(FeatureVerdict verdict) noexcept;

/// One feature's truth test on one device. A plain value.
struct VGPU_API FeatureCheck {
  std::string feature;  ///< as DeviceInfo::features names it ("shader_float16")
  FeatureVerdict verdict = FeatureVerdict::passed;
  std::string note;     ///< what was wrong, or why the probe failed (empty when passed)
  bool stored = false;  ///< read from the L2 store: no probe ran in this process
};

/// Returns the features vgpu has a probe for, in the order check_features runs them.
VGPU_API std::vector<std::string> probed_features();

/// Truth-tests every feature device advertises (DeviceInfo::features) that vgpu has a probe for:
/// each probe runs once per device fingerprint (then memoised and stored in L2). Empty for a
/// device that advertises none of them (the CPU, OpenGL, CUDA today). A built-in variant that
/// needs a feature (OpTuning::feature: the Vulkan cooperative-matrix matmul) is planned only
/// where its verdict is passed.
VGPU_API std::vector<FeatureCheck> check_features(const Device& device);

}  // namespace vgpu
