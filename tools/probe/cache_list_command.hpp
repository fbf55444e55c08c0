// SPDX-License-Identifier: Apache-2.0
// tools/probe/cache_list_command.hpp — `vgpu-probe cache list [--device ID]... [--json]`: one line
// per L2 entry (kind, key, size, age, the kernel's name or what else the entry is, the device it
// was built for), newest first; reads headers only, changes nothing.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>

namespace vgpu::probe {

/// Registers "list" under the cache subcommand cache of app; when given, parsing sets action to
/// the function that runs it and returns the exit code (0; a bad --device is an ArgumentError, exit 2).
void add_cache_list_command(CLI::App& app, CLI::App& cache, std::function<int()>& action);

/// Returns an age in seconds as "42s", "3m", "2h" or "5d" (whole units, rounded down).
std::string age_text(std::int64_t seconds);

}  // namespace vgpu::probe
