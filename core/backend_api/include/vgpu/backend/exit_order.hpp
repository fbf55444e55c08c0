// SPDX-License-Identifier: Apache-2.0
// vgpu/backend/exit_order.hpp — keeping vgpu's own exit handler ahead of the drivers' ones.
// Backend-author interface: included by backends/*, fallback/* and core.
//
// Why: vgpu's background thread (a calibration, issue 17) may be inside a driver when the
// process exits. The exit handlers of the driver libraries (their C++ static destructors, Mesa's
// and LLVM's among them) tear the driver down, and a thread still inside it then crashes
// (issue 29: lavapipe compiling in LLVM while LLVM's statics were destroyed). Exit handlers run
// in reverse order of registration, and a library registers its own when it is loaded, when it
// creates a context or a device, or when it first runs some code. So core keeps one handler,
// which stops and joins every vgpu background thread (the running job finishes the driver call
// it is in and stops at its next step), registered again after each such event: it then runs
// before every driver handler registered so far, while the drivers still work.
//
// The same holds for vgpu's own statics: a function-local static with a destructor that a
// background thread may construct first (inside a device open, a probe, a compile) registers
// that destructor after this handler, so at exit it runs first, and the thread, not yet joined,
// then uses a destroyed object (seen: CUDA's primary-context table, a SIGSEGV at exit in 27 of
// 30 short runs on the H200). Such statics are leaked (`static T& x = *new T(...)`), never
// destroyed.
#pragma once

namespace vgpu {

/// Call right after anything that may have registered process exit handlers — loading a driver
/// library, creating an instance, a context or a device — so that vgpu's exit handler stays
/// ahead of them. Costs nothing until a background thread exists; any thread.
void driver_exit_handlers_changed() noexcept;

namespace detail {

/// Core: sets the action that must run at exit before every driver's exit handler (stopping the
/// background threads) and registers it; later calls (the same action) only register it again
/// when needed. The action must be idempotent: it may end up registered several times.
void run_first_at_exit(void (*action)()) noexcept;

/// Registers the action again when exit handlers may have been added since its last
/// registration: with force always, else when the process loaded a shared library since (the
/// dynamic loader's count of loads). A no-op until
/// run_first_at_exit() set the action. Cheap (a lock and the loader's counter): called between
/// the steps of background work. Any thread.
void keep_first_at_exit(bool force = false) noexcept;

}  // namespace detail
}  // namespace vgpu
