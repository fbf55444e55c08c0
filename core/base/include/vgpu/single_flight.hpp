// SPDX-License-Identifier: Apache-2.0
// vgpu/single_flight.hpp — one run per key at a time; the other callers wait for its outcome.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>

#include "vgpu/error.hpp"

namespace vgpu {

/// Whether a flight runs for a key, and on which thread.
enum class FlightState {
  none,               ///< nothing runs for the key: the caller may run() it
  running_here,       ///< the calling thread runs it (waiting would wait for itself)
  running_elsewhere,  ///< another thread runs it: wait() for its outcome
};

/// Single flight: while one thread runs the work for a key (a kernel build, a calibration, a
/// variant measurement), the other threads asking for that key wait for its outcome — its
/// value, or its exception — instead of doing the work again. The work runs without the lock.
///
/// Thread safety: not locked by itself. It belongs to an owner whose mutex guards it together
/// with the owner's table of finished results, so that "use the finished result, join the
/// flight, or start one" is one decision: every member is called with that mutex held, and
/// wait() and run() take the owner's lock to release it while they wait or work.
template <class Key, class Value = std::monostate, class Hash = std::hash<Key>>
class SingleFlight {
 public:
  /// Says whether a flight runs for key, and whether the calling thread runs it.
  FlightState state(const Key& key) const {
    auto it = flights_.find(key);
    if (it == flights_.end()) return FlightState::none;
    return it->second->runner == std::this_thread::get_id() ? FlightState::running_here
                                                            : FlightState::running_elsewhere;
  }

  /// Waits, releasing lock, for the flight another thread runs for key to end; rethrows its
  /// exception, else returns its value. Call only when state(key) is running_elsewhere.
  Value wait(std::unique_lock<std::mutex>& lock, const Key& key) {
    auto it = flights_.find(key);
    if (it == flights_.end() || it->second->runner == std::this_thread::get_id())
      fail(ErrorCategory::internal, "a single-flight wait was asked for a key no other thread runs.",
           "report this with the stack trace; it is a bug in vgpu.");
    const std::shared_ptr<Flight> flight = it->second;
    done_.wait(lock, [&] { return flight->finished; });
    if (flight->error) std::rethrow_exception(flight->error);
    return *flight->value;
  }

  /// Runs work() as key's flight, without lock: waiters of key block until it ends. Then,
  /// under lock again and before any waiter wakes, calls commit(made, error): made points at
  /// work's value (null when it threw), error is its exception (null when it returned), so the
  /// owner records the result where later callers find it. Rethrows work's exception, else
  /// returns its value. Call only when state(key) is none. work returns Value (void when Value
  /// is std::monostate); commit must not throw.
  template <class Work, class Commit>
  Value run(std::unique_lock<std::mutex>& lock, const Key& key, Work&& work, Commit&& commit) {
    auto flight = std::make_shared<Flight>();
    if (!flights_.emplace(key, flight).second)
      fail(ErrorCategory::internal, "a single flight was started for a key that already has one.",
           "report this with the stack trace; it is a bug in vgpu.");
    lock.unlock();
    std::optional<Value> made;
    std::exception_ptr error;
    try {
      if constexpr (std::is_void_v<std::invoke_result_t<Work&>>) {
        work();
        made.emplace();
      } else {
        made.emplace(work());
      }
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    flights_.erase(key);
    commit(made ? &*made : static_cast<Value*>(nullptr), error);
    flight->finished = true;
    flight->error = error;
    if (made) flight->value = *made;
    done_.notify_all();
    if (error) std::rethrow_exception(error);
    return std::move(*made);
  }

 private:
  struct Flight {
    std::thread::id runner = std::this_thread::get_id();
    bool finished = false;
    std::exception_ptr error;
    std::optional<Value> value;
  };
  std::unordered_map<Key, std::shared_ptr<Flight>, Hash> flights_;
  std::condition_variable done_;  // a flight ended
};

}  // namespace vgpu
