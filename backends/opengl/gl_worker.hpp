// backends/opengl/gl_worker.hpp — the one thread that owns a GL context.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

namespace vgpu::opengl {

/// A thread with a FIFO task queue. A GL context is current on one thread at a time, so each
/// GL device gives its context to one GlWorker and marshals every GL call to it: run() queues a
/// task and waits for it, post() queues one and returns. Tasks run in the order they were
/// queued, whichever thread queued them, which is what orders a device's operations.
/// An exception thrown by a run() task is rethrown in the calling thread (vgpu::Error as is,
/// std::bad_alloc as is, anything else as Error(internal)); one thrown by a post() task is kept
/// and rethrown by the next run() that asks for deferred errors.
/// Thread-safety: run() and post() are safe from any number of threads at once; run() called
/// on the worker thread itself runs the task inline (no deadlock). After stop(), run() throws
/// Error(unavailable) and post() drops its task. stop() and the destructor must not race other
/// calls that expect their task to run.
class GlWorker {
 public:
  /// Starts the thread; name shows in debuggers (at most 15 characters are kept).
  explicit GlWorker(const char* name);
  /// Calls stop().
  ~GlWorker();
  GlWorker(const GlWorker&) = delete;
  GlWorker& operator=(const GlWorker&) = delete;

  /// Runs f on the worker thread and returns its result; rethrows its exception here. With
  /// report_deferred, an error kept from an earlier post() task is thrown instead of running f.
  template <class F>
  std::invoke_result_t<F&> run(F&& f, bool report_deferred = true) {
    using R = std::invoke_result_t<F&>;
    if constexpr (std::is_void_v<R>) {
      run_erased([&] { f(); }, report_deferred);
    } else {
      std::optional<R> result;
      run_erased([&] { result.emplace(f()); }, report_deferred);
      return std::move(*result);
    }
  }

  /// Queues task and returns at once; it runs after every task queued before it (dropped once
  /// the worker has stopped).
  void post(std::function<void()> task);

  /// Returns true on the worker thread.
  bool on_worker_thread() const noexcept { return std::this_thread::get_id() == thread_id_; }

  /// Runs every queued task, then ends the thread and joins it (idempotent; not from the worker).
  void stop();

 private:
  struct Waiter;
  struct Item {
    std::function<void()> owned;                     // a post() task
    const std::function<void()>* borrowed = nullptr;  // a run() task, alive until waiter is done
    Waiter* waiter = nullptr;                         // set for run(): the caller blocks on it
    bool report_deferred = false;
  };

  void run_erased(const std::function<void()>& task, bool report_deferred);
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  std::exception_ptr deferred_;  // first error of a post() task not yet reported; worker-only
  std::thread::id thread_id_;
  std::thread thread_;
};

}  // namespace vgpu::opengl
