// SPDX-License-Identifier: Apache-2.0
// vgpu/platform/process.hpp — the process and its threads: ids, thread names, whether output
// goes to a terminal. Part of the platform layer (docs/platforms.md). Internal to vgpu.
//
// Thread-safety: every function is thread-safe.
#pragma once

#include <cstdio>
#include <string_view>
#include <thread>

namespace vgpu::platform {

/// Returns this process's id (changes in a forked child).
long process_id() noexcept;

/// Returns whether the calling thread is the process's initial (main) thread; false where the
/// OS cannot tell.
bool on_initial_thread() noexcept;

/// Names thread t for debuggers and profilers (at most 15 characters are kept on Linux); a
/// no-op where the OS has no thread names.
void set_thread_name(std::thread& t, std::string_view name) noexcept;

/// Returns whether stream (stdout, stderr) is an interactive terminal.
bool is_terminal(std::FILE* stream) noexcept;

}  // namespace vgpu::platform
