// SPDX-License-Identifier: Apache-2.0
// bench/bench_first_call.cpp — vgpu-bench-first-call: process start → first Cache::matmul result.
//
//   vgpu-bench-first-call [--runs R] [--size N]
//
// Spawns itself R times (default 10) with the caller's environment (so VGPU_DEVICE=cpu:0,
// VGPU_CACHE_DIR, ... apply to every child). Each child gets the parent's steady-clock time
// taken just before posix_spawn (CLOCK_MONOTONIC is one clock for every process), runs one
// N×N matmul (default 64) through a default Cache (Runtime::global(): the selection path a
// user gets) and prints the time from that moment to its result, so exec, dynamic linking,
// static initialisers, backend probing and the first compile are all inside it. The parent
// prints every run and the best (the least disturbed by the shared machine). It uses only
// the public API, so it builds against any libvgpu.so (a "before" figure from another build).
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "vgpu/vgpu.hpp"

extern char** environ;

namespace {

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// The child: one matmul through a default Cache; prints the microseconds since t0_ns.
int child(long long t0_ns, std::uint32_t n) {
  vgpu::Cache cache;
  const vgpu::Matrix a(n, n, 1.0f), b(n, n, 2.0f);
  const vgpu::Matrix c = cache.matmul(a, b);
  const long long t1 = now_ns();
  if (c.data.empty() || c.data[0] != 2.0f * static_cast<float>(n)) {
    std::fprintf(stderr, "wrong result %g\n", c.data.empty() ? 0.0 : static_cast<double>(c.data[0]));
    return 3;
  }
  std::printf("%.3f\n", static_cast<double>(t1 - t0_ns) / 1e3);
  return 0;
}

/// Runs one child and returns its figure in microseconds (negative on failure).
double run_child(const char* self, std::uint32_t n) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  const std::string size = std::to_string(n);
  const long long t0 = now_ns();
  const std::string t0_text = std::to_string(t0);
  std::vector<char*> argv = {const_cast<char*>(self), const_cast<char*>("--child"), const_cast<char*>(t0_text.c_str()),
                             const_cast<char*>(size.c_str()), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, self, &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return -1;
  }
  std::string out;
  char buf[256];
  for (ssize_t got; (got = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(got));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return std::strtod(out.c_str(), nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--child") == 0) {
    try {
      return child(std::strtoll(argv[2], nullptr, 10), static_cast<std::uint32_t>(std::strtoul(argv[3], nullptr, 10)));
    } catch (const vgpu::Error& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 4;
    }
  }
  int runs = 10;
  std::uint32_t n = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--runs") == 0) runs = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--size") == 0) n = static_cast<std::uint32_t>(std::max(1, std::atoi(argv[i + 1])));
  }
  const char* dev = std::getenv("VGPU_DEVICE");
  std::printf("vgpu-bench-first-call: process start -> first Cache::matmul %ux%u result, VGPU_DEVICE=%s\n", n, n,
              dev ? dev : "(unset)");
  double best = -1;
  for (int r = 0; r < runs; ++r) {
    const double us = run_child("/proc/self/exe", n);
    if (us < 0) {
      std::fprintf(stderr, "run %d failed\n", r);
      return 1;
    }
    std::printf("  run %2d: %9.1f us\n", r, us);
    if (best < 0 || us < best) best = us;
  }
  std::printf("best of %d: %.1f us\n", runs, best);
  return 0;
}
