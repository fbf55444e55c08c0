// SPDX-License-Identifier: Apache-2.0
// tools/probe/select_command.hpp — `vgpu-probe select OP SIZE [--json]`: the device vgpu selects
// for an op at a size, and why (vgpu/selection.hpp: calibrated, persisted, forced, ...).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "vgpu/types.hpp"

namespace vgpu::probe {

/// Registers the "select" subcommand on app; when given, parsing sets action to the function
/// that runs it and returns the exit code (0; a vgpu::Error propagates to main).
void add_select_command(CLI::App& app, std::function<int()>& action);

/// Parses SIZE for op: "N" or "AxBx..." (numbers may be written 1e6). A single N means
/// {N, N, N} for matmul, {N, N} for softmax_rows and {N} otherwise. Throws invalid_argument.
Shape parse_size(const std::string& op, const std::string& size);

}  // namespace vgpu::probe
