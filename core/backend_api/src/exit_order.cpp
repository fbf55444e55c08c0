// SPDX-License-Identifier: Apache-2.0
// core/backend_api/src/exit_order.cpp — re-registering vgpu's first exit handler after the drivers' ones.
#include "vgpu/backend/exit_order.hpp"

#include <cstdlib>
#include <mutex>

#include "vgpu/platform/dynamic_library.hpp"

namespace vgpu {
namespace {

struct ExitOrder {
  std::mutex mutex;              // a leaf; never held by the action itself
  void (*action)() = nullptr;    // null until a background thread exists: nothing to stop before
  unsigned long long loads = 0;  // the loader's load count at the last registration
};

ExitOrder& state() {
  static ExitOrder* s = new ExitOrder();  // never destroyed: used while the process exits
  return *s;
}

// How many shared objects the process has loaded so far (only grows); 0 where the loader does
// not say.
unsigned long long loaded_objects() noexcept { return platform::loaded_library_count(); }

// Registers s.action after every exit handler registered so far (s.mutex held). Registering
// fails only once exit() has begun: the handlers registered then still run, newest first.
void register_locked(ExitOrder& s, unsigned long long loads) noexcept {
  if (std::atexit(s.action) == 0) s.loads = loads;
}

}  // namespace

void driver_exit_handlers_changed() noexcept {
  ExitOrder& s = state();
  const unsigned long long loads = loaded_objects();
  std::lock_guard lock(s.mutex);
  if (s.action) register_locked(s, loads);
}

namespace detail {

void run_first_at_exit(void (*action)()) noexcept {
  ExitOrder& s = state();
  const unsigned long long loads = loaded_objects();
  std::lock_guard lock(s.mutex);
  s.action = action;
  register_locked(s, loads);
}

void keep_first_at_exit(bool force) noexcept {
  ExitOrder& s = state();
  const unsigned long long loads = loaded_objects();
  std::lock_guard lock(s.mutex);
  if (s.action && (force || loads != s.loads)) register_locked(s, loads);
}

}  // namespace detail
}  // namespace vgpu
