// SPDX-License-Identifier: Apache-2.0
// core/src/background_worker.hpp — one thread that runs jobs posted to it, in order, and that
// process exit and its owner's destruction stop cleanly (issue 17: calibrations run in the
// background while a ready device serves the call).
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
  /// Registers a process exit handler that stops every live worker, once per call: call it
  /// after vendor libraries were loaded, so that it runs before their own exit handlers
  /// (handlers run in reverse order of registration), i.e. while the drivers still work.
  static void stop_all_at_exit();
  /// Returns whether this thread is a worker's (one of its jobs runs here).
  static bool on_worker_thread() noexcept;
  /// On a worker's thread: waits until its stop() begins, at most limit; returns whether it
  /// began. Elsewhere returns false at once. For the tests' hold (testing.hpp).
  static bool wait_for_stop_here(std::chrono::milliseconds limit);

 private:
  void run();
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job> queue_;
  bool running_job_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace vgpu::detail
