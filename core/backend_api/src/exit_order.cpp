// SPDX-License-Identifier: Apache-2.0
// core/backend_api/src/exit_order.cpp — re-registering vgpu's first exit handler after the drivers' ones.
#include "vgpu/backend/exit_order.hpp"

#include <link.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mutex>

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

// How many shared objects the process has loaded so far (glibc's dlpi_adds, which only grows);
// 0 where the loader does not say.
unsigned long long loaded_objects() noexcept {
  unsigned long long adds = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t size, void* out) {
        if (size >= offsetof(dl_phdr_info, dlpi_adds) + sizeof info->dlpi_adds)
          *static_cast<unsigned long long*>(out) = info->dlpi_adds;
        return 1;  // the count is the same in every entry: the first one is enough
      },
      &adds);
  return adds;
}

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
