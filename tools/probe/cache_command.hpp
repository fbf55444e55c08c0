// SPDX-License-Identifier: Apache-2.0
// tools/probe/cache_command.hpp — `vgpu-probe cache list|stats|clear|verify|export|import`: inspect,
// maintain and carry (as one bundle file) the L2 kernel cache directory (the one
// DiskStore::global() uses, from VGPU_CACHE_DIR etc.).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace vgpu::probe {

/// Registers the "cache" subcommand and its list, stats, clear, verify, export and import
/// subcommands on app (list, stats, clear and verify take --device: only the entries of those
/// devices; an id that names no device here is an ArgumentError, exit 2). When
/// one of them is given on the command line, parsing sets action to the function that runs it
/// and returns the process exit code: 0, or 1 from verify when bad entries remain, and from
/// clear or verify --fix when something could not or would not be deleted (listed with why),
/// from export when invalid entries were left out and from import when entries were rejected; a
/// bundle that is not usable as a whole escapes as vgpu::Error
/// (invalid_argument: main maps it to 2, a bad argument value, like a bad SIZE).
void add_cache_command(CLI::App& app, std::function<int()>& action);

}  // namespace vgpu::probe
