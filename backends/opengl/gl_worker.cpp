// SPDX-License-Identifier: Apache-2.0
// backends/opengl/gl_worker.cpp — the context-owning thread and its task queue.
#include "gl_worker.hpp"

#include <algorithm>
#include <chrono>
#include <new>
#include <string>

#include "vgpu/error.hpp"
#include "vgpu/log.hpp"
#include "vgpu/platform/process.hpp"

namespace vgpu::opengl {

/// Where a run() caller waits for its task; lives on the caller's stack.
struct GlWorker::Waiter {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::atomic<bool> ready{false};  // done, for the caller's poll without the lock
  std::exception_ptr error;
};

namespace {

// How long a caller polls for its task's end, and the worker for its next task, before sleeping
// on a condition variable: a short task (a staged write, a read after a fence) ends within
// microseconds, while a thread woken from a futex wait takes tens of microseconds to run again,
// once per hand-off each way. Polling yields, so a busy machine runs its other threads meanwhile.
// Only where spare cores exist: on a small, busy machine a polling thread takes the core the
// driver's own threads (llvmpipe's) need, and the trip gets slower, not faster (measured).
constexpr std::chrono::microseconds kPoll{50};
const bool kPolls = std::thread::hardware_concurrency() >= 8;

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

// What the callers of dropped run() tasks get once the worker was given up on.
std::exception_ptr abandoned_error() {
  try {
    fail(ErrorCategory::device_lost,
         "the OpenGL device was given up on: a call ran past its time limit while its context's thread was busy "
         "(it may be stuck in the driver).",
         "open the device again: Runtime::open() of its id gives a fresh one (vgpu-probe lists the ids).");
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

}  // namespace

GlWorker::GlWorker(const char* name) {
  // Tasks reach the thread through mutex_, which orders this write before any task reads it.
  thread_ = std::thread([this] { loop(); });
  thread_id_ = thread_.get_id();
  platform::set_thread_name(thread_, name);
}

GlWorker::~GlWorker() { stop(nullptr, Deadline()); }

bool GlWorker::stop(std::function<void()> last, const Deadline& deadline) {
  if (!thread_.joinable()) return true;
  {
    std::lock_guard lock(mutex_);
    if (last) queue_.push_back(Item{std::move(last), nullptr, nullptr, false});
    stopping_ = true;
  }
  wake_.notify_one();
  {
    std::unique_lock lock(mutex_);
    const auto ended = [&] { return exited_; };
    if (deadline.limited()) {
      if (!exited_cv_.wait_until(lock, deadline.when(), ended)) {
        // Stuck in the driver: joining could take forever. The thread ends by itself once the
        // driver returns (after running last); its owner keeps this object alive for it.
        lock.unlock();
        thread_.detach();
        return false;
      }
    } else {
      exited_cv_.wait(lock, ended);
    }
  }
  thread_.join();
  return true;
}

void GlWorker::complete(Waiter& w, std::exception_ptr error) {
  std::lock_guard lock(w.mutex);
  w.error = std::move(error);
  w.done = true;
  w.ready.store(true, std::memory_order_release);
  w.cv.notify_one();  // under the lock: w lives on the caller's stack and goes when it wakes
}

void GlWorker::abandon() {
  std::deque<Item> dropped;
  {
    std::lock_guard lock(mutex_);
    abandoned_ = true;
    dropped.swap(queue_);
    // Under mutex_: a caller whose deadline passed looks for its item in the queue, and must
    // find it either there or completed.
    for (Item& item : dropped)
      if (item.waiter) complete(*item.waiter, abandoned_error());
  }
  // The dropped post() tasks (and what they hold) go here, outside the lock.
}

void GlWorker::post(std::function<void()> task) {
  if (on_worker_thread()) {  // already in order: everything queued earlier has run
    if (abandoned_.load(std::memory_order_relaxed)) return;
    try {
      task();
    } catch (...) {
      if (!deferred_) deferred_ = normalised(std::current_exception());
    }
    return;
  }
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || abandoned_) return;  // the context is gone or given up: nothing may run any more
    queue_.push_back(Item{std::move(task), nullptr, nullptr, false});
  }
  wake_.notify_one();
}

void GlWorker::run_erased(const std::function<void()>& task, const Deadline& deadline, bool report_deferred) {
  if (on_worker_thread()) {
    task();
    return;
  }
  Waiter waiter;
  {
    std::lock_guard lock(mutex_);
    if (abandoned_) std::rethrow_exception(abandoned_error());
    if (stopping_)
      fail(ErrorCategory::unavailable, "the OpenGL device was shut down (the process is exiting).",
           "finish using vgpu devices before the process exits.");
    queue_.push_back(Item{{}, &task, &waiter, report_deferred});
  }
  wake_.notify_one();
  if (kPolls)
    for (const auto until = std::chrono::steady_clock::now() + kPoll;
         !waiter.ready.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < until;)
      std::this_thread::yield();
  const auto done = [&] { return waiter.done; };
  std::unique_lock lock(waiter.mutex);
  if (!deadline.limited()) {
    waiter.cv.wait(lock, done);
  } else if (!waiter.cv.wait_until(lock, deadline.when(), done)) {
    lock.unlock();
    {
      std::lock_guard queue_lock(mutex_);
      auto it = std::find_if(queue_.begin(), queue_.end(), [&](const Item& i) { return i.waiter == &waiter; });
      if (it != queue_.end()) {  // never started: the thread is busy with earlier work
        queue_.erase(it);
        throw Expired{};
      }
    }
    // Started (or completed by abandon()): the task may use this frame, so it is waited for;
    // it bounds its own GPU waits by the same deadline, so only a driver hang keeps it here.
    lock.lock();
    if (!waiter.cv.wait_for(lock, std::chrono::seconds(10), done)) {
      log(LogLevel::warn,
          "an OpenGL call is still inside the driver 10 s after its time limit; waiting for it, since it "
          "uses the caller's memory.");
      waiter.cv.wait(lock, done);
    }
  }
  if (waiter.error) std::rethrow_exception(waiter.error);
}

void GlWorker::loop() {
  for (;;) {
    Item item;
    {
      std::unique_lock lock(mutex_);
      // The next task of a caller making several calls usually comes within microseconds.
      for (const auto until = std::chrono::steady_clock::now() + kPoll;
           kPolls && queue_.empty() && !stopping_ && std::chrono::steady_clock::now() < until;) {
        lock.unlock();
        std::this_thread::yield();
        lock.lock();
      }
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) {  // stopping, and every queued task has run
        exited_ = true;
        exited_cv_.notify_all();  // under the lock: stop() may give up on the thread right after
        return;
      }
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
      complete(*item.waiter, std::move(error));  // the worker keeps no reference to the caller's exception
    } else if (error && !deferred_) {
      deferred_ = error;
    }
  }
}

}  // namespace vgpu::opengl
