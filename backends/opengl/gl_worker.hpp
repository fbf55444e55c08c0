// SPDX-License-Identifier: Apache-2.0
// backends/opengl/gl_worker.hpp — the one thread that owns a GL context.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

#include "vgpu/backend/deadline.hpp"

namespace vgpu::opengl {

/// A thread with a FIFO task queue. A GL context is current on one thread at a time, so each
/// GL device gives its context to one GlWorker and marshals every GL call to it: run() queues a
/// task and waits for it, post() queues one and returns. Tasks run in the order they were
/// queued, whichever thread queued them, which is what orders a device's operations.
/// An exception thrown by a run() task is rethrown in the calling thread (vgpu::Error as is,
/// std::bad_alloc as is, anything else as Error(internal)); one thrown by a post() task is kept
/// and rethrown by the next run() that asks for deferred errors.
///
/// Time limits: the thread may block inside the driver (llvmpipe runs a dispatch to its end
/// inside glDispatchCompute), so run() waits for its task only until its deadline. A task that
/// has not started by then is taken off the queue and run() throws Expired; the owner then
/// calls abandon(), since the thread may be stuck. A task that has started is waited for to its
/// end, since it may use the caller's memory: a task must therefore bound its own waits for the
/// GPU by the same deadline (a fence and glClientWaitSync first), never block on GPU work in a
/// plain GL call. stop() ends the thread within a deadline, or leaves it detached.
///
/// Thread-safety: run(), post() and abandon() are safe from any number of threads at once; run()
/// called on the worker thread itself runs the task inline (no deadlock). After stop() or
/// abandon(), run() throws Error (unavailable, device_lost) and post() drops its task. stop()
/// and the destructor must not race other calls that expect their task to run.
class GlWorker {
 public:
  /// What run() throws when its deadline passed before its task started (the task was dropped).
  struct Expired {};

  /// Starts the thread; name shows in debuggers (at most 15 characters are kept).
  explicit GlWorker(const char* name);
  /// Ends the thread (stop() without a last task or limit) unless stop() already did; must not
  /// run while a detached thread still uses this object (its owner then leaks it).
  ~GlWorker();
  GlWorker(const GlWorker&) = delete;
  GlWorker& operator=(const GlWorker&) = delete;

  /// Runs f on the worker thread and returns its result; rethrows its exception here. Throws
  /// Expired when deadline passes before f started. With report_deferred, an error kept from an
  /// earlier post() task is thrown instead of running f.
  template <class F>
  std::invoke_result_t<F&> run(F&& f, const Deadline& deadline, bool report_deferred = true) {
    using R = std::invoke_result_t<F&>;
    if constexpr (std::is_void_v<R>) {
      run_erased([&] { f(); }, deadline, report_deferred);
    } else {
      std::optional<R> result;
      run_erased([&] { result.emplace(f()); }, deadline, report_deferred);
      return std::move(*result);
    }
  }

  /// Queues task and returns at once; it runs after every task queued before it (dropped once
  /// the worker has stopped or was abandoned).
  void post(std::function<void()> task);

  /// Returns true on the worker thread.
  bool on_worker_thread() const noexcept { return std::this_thread::get_id() == thread_id_; }

  /// Gives up on the queue (the device is lost): drops every queued task (their run() callers
  /// get device_lost) and every task queued later; the running task finishes.
  void abandon();

  /// Queues last (which runs even after abandon(), after the task running now) and ends the
  /// thread once it has run, waiting for that until deadline. Returns true when the thread has
  /// ended and was joined; false when it is still busy: it is then detached and ends by itself,
  /// and this object (and whatever its tasks use) must stay alive. Idempotent; not from the worker.
  bool stop(std::function<void()> last, const Deadline& deadline);

 private:
  struct Waiter;
  struct Item {
    std::function<void()> owned;                      // a post() task (or stop()'s last one)
    const std::function<void()>* borrowed = nullptr;  // a run() task, alive until waiter is done
    Waiter* waiter = nullptr;                         // set for run(): the caller blocks on it
    bool report_deferred = false;
  };

  void run_erased(const std::function<void()>& task, const Deadline& deadline, bool report_deferred);
  void loop();
  // Completes a dropped run() item's waiter with error.
  static void complete(Waiter& waiter, std::exception_ptr error);

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  std::atomic<bool> abandoned_{false};  // written under mutex_; read without it on the worker
  bool exited_ = false;                 // the loop has returned (guarded by mutex_)
  std::condition_variable exited_cv_;
  std::exception_ptr deferred_;  // first error of a post() task not yet reported; worker-only
  std::thread::id thread_id_;
  std::thread thread_;
};

}  // namespace vgpu::opengl
