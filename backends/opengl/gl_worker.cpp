// backends/opengl/gl_worker.cpp — the context-owning thread and its task queue.
#include "gl_worker.hpp"

#include <pthread.h>

#include <new>
#include <string>

#include "vgpu/error.hpp"

namespace vgpu::opengl {

/// Where a run() caller waits for its task; lives on the caller's stack.
struct GlWorker::Waiter {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
};

namespace {

// Keeps vgpu::Error and std::bad_alloc (core turns the latter into out_of_memory); anything
// else becomes Error(internal), so callers only ever see vgpu's one error type.
std::exception_ptr normalised(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const Error&) {
    return e;
  } catch (const std::bad_alloc&) {
    return e;
  } catch (const std::exception& other) {
    try {
      fail(ErrorCategory::internal, std::string("the OpenGL worker thread failed: ") + other.what(),
           "report this as a vgpu bug, with the output of vgpu-probe.");
    } catch (...) {
      return std::current_exception();
    }
  } catch (...) {
    try {
      fail(ErrorCategory::internal, "the OpenGL worker thread failed with an unknown exception.",
           "report this as a vgpu bug, with the output of vgpu-probe.");
    } catch (...) {
      return std::current_exception();
    }
  }
  return e;
}

}  // namespace

GlWorker::GlWorker(const char* name) {
  // Tasks reach the thread through mutex_, which orders this write before any task reads it.
  thread_ = std::thread([this] { loop(); });
  thread_id_ = thread_.get_id();
  pthread_setname_np(thread_.native_handle(), std::string(name).substr(0, 15).c_str());
}

GlWorker::~GlWorker() { stop(); }

void GlWorker::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void GlWorker::post(std::function<void()> task) {
  if (on_worker_thread()) {  // already in order: everything queued earlier has run
    try {
      task();
    } catch (...) {
      if (!deferred_) deferred_ = normalised(std::current_exception());
    }
    return;
  }
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;  // the context is gone; nothing may run any more
    queue_.push_back(Item{std::move(task), nullptr, nullptr, false});
  }
  wake_.notify_one();
}

void GlWorker::run_erased(const std::function<void()>& task, bool report_deferred) {
  if (on_worker_thread()) {
    task();
    return;
  }
  Waiter waiter;
  {
    std::lock_guard lock(mutex_);
    if (stopping_)
      fail(ErrorCategory::unavailable, "the OpenGL device was shut down (the process is exiting).",
           "finish using vgpu devices before the process exits.");
    queue_.push_back(Item{{}, &task, &waiter, report_deferred});
  }
  wake_.notify_one();
  std::unique_lock lock(waiter.mutex);
  waiter.cv.wait(lock, [&] { return waiter.done; });
  if (waiter.error) std::rethrow_exception(waiter.error);
}

void GlWorker::loop() {
  for (;;) {
    Item item;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and every queued task has run
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    std::exception_ptr error;
    if (item.waiter && item.report_deferred && deferred_) {
      error = std::exchange(deferred_, nullptr);  // report an earlier async failure instead
    } else {
      try {
        if (item.borrowed)
          (*item.borrowed)();
        else
          item.owned();
      } catch (...) {
        error = normalised(std::current_exception());
      }
    }
    if (item.waiter) {
      Waiter& w = *item.waiter;
      {
        std::lock_guard lock(w.mutex);
        w.error = std::move(error);  // the worker keeps no reference to the caller's exception
        w.done = true;
        w.cv.notify_one();  // under the lock: w lives on the caller's stack and goes when it wakes
      }
    } else if (error && !deferred_) {
      deferred_ = error;
    }
  }
}

}  // namespace vgpu::opengl
