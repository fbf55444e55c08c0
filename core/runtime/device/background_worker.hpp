// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/background_worker.hpp — one thread that runs jobs posted to it, in order, and that
// process exit and its owner's destruction stop cleanly (issue 17: calibrations run in the
// background while a ready device serves the call).
// Exit (issue 29): a job may be inside a driver when the process exits. An exit handler stops
// and joins every worker before any driver library's exit handlers run, which tear the driver
// down: it is registered again (vgpu/backend/exit_order.hpp) when a worker starts, when a job is
// posted or starts, whenever a backend loads a library or opens a device, and between a job's
// steps when the process loaded a library since. Stopping drops the queued jobs; the running
// one finishes the driver call it is in and returns at its next step, saying nothing.
// Thread-safety: every member is safe from any thread. The mutex is a leaf (nothing else is
// locked under it); jobs run without it. stop() may be called from an atexit handler.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace vgpu::detail {

/// A lazily started worker thread with a job queue and a cancellation flag.
class BackgroundWorker {
 public:
  /// A job: it should return soon after cancelled() turns true (checked between its steps).
  using Job = std::function<void()>;

  BackgroundWorker();
  ~BackgroundWorker();  // stop()
  BackgroundWorker(const BackgroundWorker&) = delete;
  BackgroundWorker& operator=(const BackgroundWorker&) = delete;

  /// Queues job (starting the thread on first use); false, job not queued, once stopped.
  bool post(Job job);
  /// Returns true once stop() began: jobs in flight should give up at their next step.
  bool cancelled() const noexcept;
  /// Waits until no job is queued or running, at most timeout; false when it timed out.
  bool wait_idle(std::chrono::milliseconds timeout);
  /// Cancels: drops the queued jobs, waits for the running one to return and joins the
  /// thread. Idempotent; never called from the worker thread itself (that only cancels).
  void stop() noexcept;
  /// Stops every live worker (what the exit handler does). Idempotent; any thread.
  static void stop_all() noexcept;
  /// Returns whether this thread is a worker's (one of its jobs runs here).
  static bool on_worker_thread() noexcept;
  /// Returns true on a worker's thread once its stop() began (deep code that cannot see the
  /// worker — a measurement inside a plan factory — gives up there); false on other threads.
  static bool stop_requested_here() noexcept;
  /// On a worker's thread: waits until its stop() begins, at most limit; returns whether it
  /// began. Elsewhere returns false at once. For the tests' hold (calibration_hold.hpp).
  static bool wait_for_stop_here(std::chrono::milliseconds limit);

 private:
  void run();
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job> queue_;
  bool running_job_ = false;
  bool stopping_ = false;
  std::thread thread_;
  long owner_pid_ = 0;  // the process that started thread_ (a forked child must not join it)
};

}  // namespace vgpu::detail
