// SPDX-License-Identifier: Apache-2.0
// tools/probe/list_command.hpp — `vgpu-probe list [--device ID] [--json]`: one line per device
// (id, name, type, API and driver), like `nvidia-smi -L` or `vulkaninfo --summary`; nothing is
// compiled or run, and the kernel cache is neither read nor written.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace vgpu::probe {

/// Registers the "list" subcommand on app; when given, parsing sets action to the function that
/// runs it and returns the exit code (0; a bad --device is an ArgumentError, exit 2).
void add_list_command(CLI::App& app, std::function<int()>& action);

}  // namespace vgpu::probe
