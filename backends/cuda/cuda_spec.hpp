// SPDX-License-Identifier: Apache-2.0
// backends/cuda/cuda_spec.hpp — CompileOptions::spec_constants as NVRTC -D options: CUDA C has
// no specialization constants, so a constant set by name becomes a macro of that name.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "vgpu/kernel_source.hpp"

namespace vgpu::cuda {

/// Returns value as a CUDA C literal: bool 1/0, int decimal, uint with a u suffix, float with
/// enough digits to round-trip and an f suffix (non-finite values by their bit pattern).
std::string cuda_literal(const SpecValue& value);

/// Returns "-D<name>=<literal>" for each of options' spec constants. Throws not_supported for
/// a constant set by id (CUDA has no constant ids) and invalid_argument for a name that is no
/// C identifier or that a define or vgpu's own VGPU_LOCAL_SIZE_* also sets; kernel names the
/// kernel in the message.
std::vector<std::string> spec_defines(const std::string& kernel, const CompileOptions& options);

}  // namespace vgpu::cuda
