// SPDX-License-Identifier: Apache-2.0
// mpi/src/wait.hpp — the MPI layer's bounded waits and error wording (private to libvgpu_mpi).
#pragma once

#include <mpi.h>

#include <chrono>
#include <string>

#include "vgpu/runtime.hpp"

namespace vgpu::mpi::detail {

using Clock = std::chrono::steady_clock;

/// Returns options' timeout, else the runtime's VGPU_TIMEOUT_MS, else 10 minutes (never unbounded).
std::chrono::milliseconds effective_timeout(std::chrono::milliseconds requested, const Runtime& runtime);
/// Returns requested, else fallback (a device's limit), else 10 minutes (never unbounded).
std::chrono::milliseconds effective_timeout(std::chrono::milliseconds requested, std::chrono::milliseconds fallback);
/// Throws vgpu::Error (unavailable) naming what when rc is not MPI_SUCCESS.
void check(int rc, const std::string& what);
/// Waits for request until deadline, polling; throws vgpu::Error (timeout) naming what when it
/// passes, (unavailable) when MPI reports an error. The request stays pending after a timeout.
void wait(MPI_Request& request, Clock::time_point deadline, const std::string& what);
/// Returns a duplicate of comm (MPI_Comm_idup, bounded by deadline) with MPI_ERRORS_RETURN.
MPI_Comm duplicate(MPI_Comm comm, Clock::time_point deadline, const std::string& what);

/// Frees a communicator on scope exit (not after a timeout: a pending request would use it).
/// Thread-safety: one owner thread.
class CommGuard {
 public:
  explicit CommGuard(MPI_Comm c) : comm_(c) {}
  ~CommGuard();
  CommGuard(const CommGuard&) = delete;
  CommGuard& operator=(const CommGuard&) = delete;
  /// Returns the communicator.
  MPI_Comm get() const { return comm_; }
  /// Keeps the communicator alive (after a timeout).
  void leak() { comm_ = MPI_COMM_NULL; }

 private:
  MPI_Comm comm_;
};

}  // namespace vgpu::mpi::detail
