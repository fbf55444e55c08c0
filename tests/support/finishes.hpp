// SPDX-License-Identifier: Apache-2.0
// tests/support/finishes.hpp — "did not hang" checks for the thread tests: run something on its
// own thread and report whether it finished within a generous bound.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace vgpu_test {

/// A generous "did not hang" bound: nothing the thread tests wait for takes more than a few
/// seconds when it works.
inline constexpr std::chrono::seconds kHang{30};

/// Runs fn on its own thread and returns whether it finished within kHang (an exception counts
/// as finished). On a hang the thread is left behind with what it uses — the caller keeps that
/// alive on the heap — and the test fails.
inline bool finishes(std::function<void()> fn) {
  struct Done {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
  };
  auto d = std::make_shared<Done>();
  std::thread([d, fn = std::move(fn)] {
    try {
      fn();
    } catch (...) {
    }
    std::lock_guard lock(d->m);
    d->done = true;
    d->cv.notify_all();
  }).detach();
  std::unique_lock lock(d->m);
  return d->cv.wait_for(lock, kHang, [&] { return d->done; });
}

}  // namespace vgpu_test
