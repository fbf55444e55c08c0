// SPDX-License-Identifier: Apache-2.0
// vgpu/backend_list.hpp — the names of the backends known, for messages and listings: code never
// spells a backend's name itself (tests/checks/backend_names_test.py). Defined in types.cpp, next to
// the name table. Thread-safe.
#pragma once

#include "vgpu/export.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace vgpu {

/// Returns every backend name known: vgpu's own in registry order (CPU last), then those registered
/// since (a Runtime registers its registry's and its backends' names), in order.
VGPU_API std::vector<std::string> backend_names();
/// Returns backend_names() joined by separator, e.g. "cuda, vulkan, opengl, cpu" for ", ".
VGPU_API std::string backend_name_list(std::string_view separator);

}  // namespace vgpu
