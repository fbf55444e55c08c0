// SPDX-License-Identifier: Apache-2.0
// core/runtime/arrays/array_state.hpp — what an Array handle refers to (runtime-internal).
#pragma once

#include <functional>

#include "buffer_pool.hpp"
#include "vgpu/array.hpp"
#include "vgpu/log.hpp"

namespace vgpu::detail {

/// The state behind an Array handle. Thread-safety: immutable once made (handles share it).
struct ArrayState {
  Device device;
  // Owns a pooled buffer for every array over it (reshapes share it): the last one to go gives
  // it back to the device's pool. Null for the caller's memory and zero-element arrays.
  std::shared_ptr<PooledStorage> storage;
  Buffer buffer;  // empty when the array has no elements (destroyed before storage: see above)
  DType dtype = DType::f32;
  Shape shape;
  bool external = false;  // the caller's memory, used in place (Array::from_external)
};

/// Runs an Array::from_external release function once, when the last reference goes (after
/// the buffer over the memory is freed); an exception from it is logged, never thrown from here.
struct ReleaseOnce {
  std::function<void()> fn;
  ReleaseOnce() = default;
  ReleaseOnce(const ReleaseOnce&) = delete;
  ReleaseOnce& operator=(const ReleaseOnce&) = delete;
  ~ReleaseOnce() {
    if (!fn) return;
    try {
      fn();
    } catch (const std::exception& e) {
      log(LogLevel::warn, std::string("an Array's release function threw: ") + e.what());
    } catch (...) {
      log(LogLevel::warn, "an Array's release function threw a non-standard exception.");
    }
  }
};

}  // namespace vgpu::detail
