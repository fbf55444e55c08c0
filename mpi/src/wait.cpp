// SPDX-License-Identifier: Apache-2.0
// mpi/src/wait.cpp — bounded waits: a rank that died or hangs turns into vgpu::Error (timeout)
// on the others instead of a hang (MPI itself waits forever for a peer that never answers).
#include "wait.hpp"

#include <thread>

#include "vgpu/error.hpp"

namespace vgpu::mpi::detail {

std::chrono::milliseconds effective_timeout(std::chrono::milliseconds requested, const Runtime& runtime) {
  return effective_timeout(requested, runtime.config().timeout);
}

std::chrono::milliseconds effective_timeout(std::chrono::milliseconds requested, std::chrono::milliseconds fallback) {
  if (requested.count() > 0) return requested;
  if (fallback.count() > 0) return fallback;
  return std::chrono::minutes(10);
}

void check(int rc, const std::string& what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error(ErrorCategory::unavailable, "vgpu::mpi: " + what + " failed: " + std::string(text, len) + ".",
              "a rank of the job probably died or its network failed; see the other ranks' output and mpirun's "
              "message, then rerun the job.");
}

void wait(MPI_Request& request, Clock::time_point deadline, const std::string& what) {
  // Polls with a growing sleep (10 µs ... 2 ms): cheap for the quick collectives, idle while a
  // leader compiles for minutes.
  auto nap = std::chrono::microseconds(10);
  for (;;) {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
    if (done) return;
    if (Clock::now() >= deadline)
      throw Error(ErrorCategory::timeout, "vgpu::mpi: " + what + " did not complete in time: a rank stopped answering.",
                  "check the other ranks' output for a crash or a hang; raise the limit (VGPU_TIMEOUT_MS, or the "
                  "call's timeout option) when the work is just slow; then call MPI_Abort, the communicator's state "
                  "is unknown.");
    std::this_thread::sleep_for(nap);
    if (nap < std::chrono::milliseconds(2)) nap *= 2;
  }
}

MPI_Comm duplicate(MPI_Comm comm, Clock::time_point deadline, const std::string& what) {
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Comm_idup(comm, &dup, &request), what + " (MPI_Comm_idup)");
  wait(request, deadline, what + " (MPI_Comm_idup)");
  check(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN), what + " (MPI_Comm_set_errhandler)");
  return dup;
}

CommGuard::~CommGuard() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

}  // namespace vgpu::mpi::detail
