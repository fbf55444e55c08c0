// SPDX-License-Identifier: Apache-2.0
// core/src/background_worker.cpp — the background job thread and its exit handling.
#include "background_worker.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <set>
#include <vector>

#include "vgpu/log.hpp"

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

void stop_live_workers() {
  std::vector<BackgroundWorker*> live;
  {
    std::lock_guard lock(registry().mutex);
    live.assign(registry().live.begin(), registry().live.end());
  }
  // stop() of a worker whose owner is being destroyed on another thread meanwhile is safe: the
  // owner's destructor unregisters first and stop() is idempotent. At exit nothing else runs.
  for (BackgroundWorker* w : live) w->stop();
}

// The worker whose job runs on this thread (null elsewhere).
thread_local BackgroundWorker* t_current = nullptr;

}  // namespace

bool BackgroundWorker::on_worker_thread() noexcept { return t_current != nullptr; }

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
  std::lock_guard lock(mutex_);
  if (stopping_) return false;
  queue_.push_back(std::move(job));
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  changed_.notify_all();
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
  }
  if (t.joinable()) t.join();  // the running job returns at its next step (cancelled())
}

void BackgroundWorker::stop_all_at_exit() {
  // Bounded: a process posts one job per op and size class, and registering costs one entry.
  static std::atomic<int> registered{0};
  if (registered.fetch_add(1) < 256) std::atexit(stop_live_workers);
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
    try {
      job();
    } catch (const std::exception& e) {
      // A job reports its own errors; one escaping is logged, never allowed to end the process.
      log(LogLevel::warn, std::string("a background job failed: ") + e.what());
    } catch (...) {
      log(LogLevel::warn, "a background job failed with an unknown exception");
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
