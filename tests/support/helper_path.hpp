// SPDX-License-Identifier: Apache-2.0
// tests/support/helper_path.hpp — where a test finds the helper programs it runs.
#pragma once

#include <filesystem>
#include <string>

namespace vgpu::test {

/// Returns the helper program next to this test executable when there is one (a staged copy
/// of the binaries, as tools/gpu-run.sh makes), else the path the build recorded.
inline std::string helper_path(const std::string& built_path) {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto sibling = self.parent_path() / std::filesystem::path(built_path).filename();
    if (std::filesystem::exists(sibling, ec)) return sibling.string();
  }
  return built_path;
}

}  // namespace vgpu::test
