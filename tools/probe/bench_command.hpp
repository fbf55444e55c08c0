// SPDX-License-Identifier: Apache-2.0
// tools/probe/bench_command.hpp — `vgpu-probe bench [--quick] [--device ID] [--json]`: per device,
// the steady round trip of a small persistent kernel, host↔device bandwidth and matmul GFLOP/s
// at two sizes, with a progress line on stderr while it runs.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace vgpu::probe {

/// Registers the "bench" subcommand on app; when given, parsing sets action to the function
/// that runs it and returns the exit code (0; a vgpu::Error propagates to main).
void add_bench_command(CLI::App& app, std::function<int()>& action);

}  // namespace vgpu::probe
