// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/background_worker.cpp — the background job thread and its exit handling.
#include "background_worker.hpp"

#include <algorithm>
#include <exception>
#include <set>
#include <vector>

#include "vgpu/backend/exit_order.hpp"
#include "vgpu/log.hpp"
#include "vgpu/platform/process.hpp"

namespace vgpu::detail {
namespace {

// Every live worker, so that an exit handler can stop them (the global Runtime is never
// destroyed, so its worker would otherwise run on while exit() tears the drivers down).
struct Registry {
  std::mutex mutex;  // a leaf
  std::set<BackgroundWorker*> live;
};
Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: exit handlers use it
  return *r;
}

// The worker whose job runs on this thread (null elsewhere).
thread_local BackgroundWorker* t_current = nullptr;

// The exit handler (registered again and again: it must be cheap once everything stopped).
void stop_live_workers() { BackgroundWorker::stop_all(); }

// The main thread's exit guard. glibc runs the exiting thread's thread_local destructors before
// any atexit handler or static destructor (__run_exit_handlers calls __call_tls_dtors first),
// so when the main thread ends the process (returning from main, or exit()) this stops and
// joins the workers before any library is torn down — also one a worker loaded a moment
// before, whose handlers precede vgpu's registered one (seen: lavapipe's LLVM, loaded by a
// background probe while main returned, destroyed under it: a hang at exit in 8 of 80 runs).
// Armed on the main thread only: another thread's end must not stop the process's background
// work. (A main thread that ends by pthread_exit while others go on does stop it: background
// calibrations are then refused and the interim choices stay.) exit() from another thread, or
// background work posted only off the main thread, keep the registered handler
// (run_first_at_exit).
struct MainThreadExitGuard {
  ~MainThreadExitGuard() { BackgroundWorker::stop_all(); }
};

void arm_main_thread_exit_guard() noexcept {
  if (!platform::on_initial_thread()) return;  // also where the OS cannot tell: the at-exit handler stays
  thread_local MainThreadExitGuard guard;      // its destructor is registered once, on the main thread
  (void)guard;
}

}  // namespace

void BackgroundWorker::stop_all() noexcept {
  std::vector<BackgroundWorker*> live;
  {
    std::lock_guard lock(registry().mutex);
    live.assign(registry().live.begin(), registry().live.end());
  }
  // stop() of a worker whose owner is being destroyed on another thread meanwhile is safe: the
  // owner's destructor unregisters first and stop() is idempotent. At exit nothing else runs.
  for (BackgroundWorker* w : live) w->stop();
}

bool BackgroundWorker::on_worker_thread() noexcept { return t_current != nullptr; }

bool BackgroundWorker::stop_requested_here() noexcept { return t_current != nullptr && t_current->cancelled(); }

bool BackgroundWorker::wait_for_stop_here(std::chrono::milliseconds limit) {
  BackgroundWorker* w = t_current;
  if (w == nullptr) return false;
  std::unique_lock lock(w->mutex_);
  return w->changed_.wait_for(lock, limit, [&] { return w->stopping_; });
}

BackgroundWorker::BackgroundWorker() {
  std::lock_guard lock(registry().mutex);
  registry().live.insert(this);
}

BackgroundWorker::~BackgroundWorker() {
  {
    std::lock_guard lock(registry().mutex);
    registry().live.erase(this);
  }
  stop();
}

bool BackgroundWorker::post(Job job) {
  arm_main_thread_exit_guard();
  bool started = false;
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return false;
    queue_.push_back(std::move(job));
    if (!thread_.joinable()) {
      thread_ = std::thread([this] { run(); });
      owner_pid_ = platform::process_id();
      started = true;
    }
    changed_.notify_all();
  }
  // After the caller's probing and opening so far (outside the leaf mutex: the exit handler
  // takes it). The job itself re-registers between its steps when it loads more.
  if (started)
    run_first_at_exit(stop_live_workers);
  else
    keep_first_at_exit(true);
  return true;
}

bool BackgroundWorker::cancelled() const noexcept {
  std::lock_guard lock(mutex_);
  return stopping_;
}

bool BackgroundWorker::wait_idle(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return queue_.empty() && !running_job_; });
}

void BackgroundWorker::stop() noexcept {
  std::thread t;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    queue_.clear();
    changed_.notify_all();
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) t = std::move(thread_);
    if (t.joinable() && owner_pid_ != platform::process_id()) {
      // A forked child: the thread lives only in its parent, joining would wait forever.
      new std::thread(std::move(t));  // leaked on purpose: ~thread of a joinable one aborts
      return;
    }
  }
  if (t.joinable()) t.join();  // the running job returns at its next step (cancelled())
}

void BackgroundWorker::run() {
  t_current = this;
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) break;
    Job job = std::move(queue_.front());
    queue_.pop_front();
    running_job_ = true;
    lock.unlock();
    keep_first_at_exit();  // what ran since the last job may have loaded libraries
    try {
      job();
    } catch (const std::exception& e) {
      // A job reports its own errors; one escaping is logged, never allowed to end the process.
      // Nothing is said for one that a stop cut short: nobody can act on it.
      if (!cancelled()) log(LogLevel::warn, std::string("a background job failed: ") + e.what());
    } catch (...) {
      if (!cancelled()) log(LogLevel::warn, "a background job failed with an unknown exception");
    }
    job = nullptr;  // what it captured goes before the worker reports idle
    lock.lock();
    running_job_ = false;
    changed_.notify_all();
  }
  running_job_ = false;
  changed_.notify_all();
}

}  // namespace vgpu::detail
