// SPDX-License-Identifier: Apache-2.0
// bench/bench_first_call.cpp — vgpu-bench-first-call: process start → first result (issue 17).
//
//   vgpu-bench-first-call [--runs R] [--size N]
//
// Every figure is a fresh process: this program spawns itself, passing the steady-clock time
// taken just before posix_spawn (CLOCK_MONOTONIC is one clock for every process), and the
// child prints the time from that moment to its result, so exec, dynamic linking, static
// initialisers, backend probing, context creation and the first compile are all inside it. The
// best of R runs (default 5) is reported (the least disturbed by the shared machine), side by
// side in one run:
//   per device (VGPU_DEVICE=<id>):
//     open only      — an otherwise empty main that only opens that device (Runtime::open): the
//                      floor, context creation included;
//     cold           — one N×N Cache::matmul (default N=64) with an empty cache directory;
//     warm           — the same with the directory a first run filled;
//     warm − open    — what vgpu adds to opening the device (goal: ≤ 20 ms; ≤ 30 ms in all on the CPU);
//   the selection path (nothing forced: the device the selection chooses):
//     cold, background on  — empty cache: the CPU answers while the devices are measured;
//     cold, background off — empty cache, VGPU_BACKGROUND=0: the call waits for the calibration;
//     warm                 — the persisted choice (primed by a VGPU_BACKGROUND=0 run).
// It uses only the public API, so it builds against any libvgpu.so.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "vgpu/vgpu.hpp"

extern char** environ;

namespace {

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Child "matmul": one n×n matmul through a default Cache; prints "<us> <device>" since t0_ns.
int child_matmul(long long t0_ns, std::uint32_t n) {
  vgpu::Cache cache;
  const vgpu::Matrix a(n, n, 1.0f), b(n, n, 2.0f);
  const vgpu::Matrix c = cache.matmul(a, b);
  const long long t1 = now_ns();
  if (c.data.empty() || c.data[0] != 2.0f * static_cast<float>(n)) {
    std::fprintf(stderr, "wrong result %g\n", c.data.empty() ? 0.0 : static_cast<double>(c.data[0]));
    return 3;
  }
  std::printf("%.3f %s\n", static_cast<double>(t1 - t0_ns) / 1e3,
              vgpu::Runtime::global().explain("matmul", {n, n, n}).device.c_str());
  return 0;
}

/// Child "open": opens device id only; prints "<us> <id>" since t0_ns.
int child_open(long long t0_ns, const std::string& id) {
  const vgpu::Device d = vgpu::Runtime::global().open(id);
  const long long t1 = now_ns();
  std::printf("%.3f %s\n", static_cast<double>(t1 - t0_ns) / 1e3, d.info().id().c_str());
  return 0;
}

/// What one child reported.
struct ChildResult {
  double us = -1;  ///< negative: the child failed
  std::string device;
};

/// Runs `self --child <mode> <t0> <arg>` with env's names set (an empty value unsets one).
ChildResult run_child(const std::string& self, const std::string& mode, const std::string& arg,
                      const std::map<std::string, std::string>& env) {
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    if (!env.count(kv.substr(0, kv.find('=')))) envs.push_back(kv);
  }
  for (const auto& [k, v] : env)
    if (!v.empty()) envs.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : envs) envp.push_back(e.data());
  envp.push_back(nullptr);
  int fds[2];
  if (pipe(fds) != 0) return {};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  const long long t0 = now_ns();
  std::string t0_text = std::to_string(t0), mode_text = mode, arg_text = arg, flag = "--child";
  std::vector<char*> argv = {
      const_cast<char*>(self.c_str()), flag.data(), mode_text.data(), t0_text.data(), arg_text.data(), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, self.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return {};
  }
  std::string out;
  char buf[256];
  for (ssize_t got; (got = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(got));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return {};
  ChildResult r;
  char dev[128] = {0};
  if (std::sscanf(out.c_str(), "%lf %127s", &r.us, dev) < 1) return {};
  r.device = dev;
  return r;
}

/// An empty directory for one run's cache (removed by the caller).
std::filesystem::path fresh_dir(const std::string& tag) {
  static int serial = 0;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("vgpu-bench-first-call-" + std::to_string(::getpid()) + "-" + tag + "-" + std::to_string(serial++));
  std::filesystem::remove_all(dir);
  return dir;
}

/// The best of runs children; fresh: a new empty cache directory for each run.
ChildResult best_of(int runs, const std::string& self, const std::string& mode, const std::string& arg,
                    std::map<std::string, std::string> env, bool fresh) {
  ChildResult best;
  for (int r = 0; r < runs; ++r) {
    std::filesystem::path dir;
    if (fresh) {
      dir = fresh_dir("cold");
      env["VGPU_CACHE_DIR"] = dir.string();
    }
    const ChildResult got = run_child(self, mode, arg, env);
    if (fresh) std::filesystem::remove_all(dir);
    if (got.us < 0) return {};
    if (best.us < 0 || got.us < best.us) best = got;
  }
  return best;
}

std::string ms(double us) {
  if (us < 0) return "failed";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", us / 1e3);
  return buf;
}

// A difference of two best-of figures, signed (noise can make warm beat open-only).
std::string ms_diff(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f ms", us / 1e3);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::strcmp(argv[1], "--child") == 0) {
    try {
      const long long t0 = std::strtoll(argv[3], nullptr, 10);
      if (std::strcmp(argv[2], "open") == 0) return child_open(t0, argv[4]);
      return child_matmul(t0, static_cast<std::uint32_t>(std::strtoul(argv[4], nullptr, 10)));
    } catch (const vgpu::Error& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 4;
    }
  }
  int runs = 5;
  std::uint32_t n = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--runs") == 0) runs = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--size") == 0) n = static_cast<std::uint32_t>(std::max(1, std::atoi(argv[i + 1])));
  }
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string size = std::to_string(n);
  std::printf(
      "vgpu-bench-first-call: process start -> first Cache::matmul %ux%u result, best of %d fresh processes\n\n", n, n,
      runs);
  std::vector<std::string> ids;
  try {
    // Listed by a child would be cleaner, but the parent's own probe does not enter any figure.
    for (const auto& d : vgpu::Runtime::global().devices()) ids.push_back(d.id());
  } catch (const vgpu::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  int failures = 0;
  std::printf("%-10s %12s %12s %12s %12s\n", "device", "open only", "cold", "warm", "warm - open");
  for (const std::string& id : ids) {
    const std::map<std::string, std::string> env{{"VGPU_DEVICE", id}, {"VGPU_BACKGROUND", ""}};
    const ChildResult open = best_of(runs, self, "open", id, env, true);
    const ChildResult cold = best_of(runs, self, "matmul", size, env, true);
    const auto dir = fresh_dir("warm");
    std::map<std::string, std::string> warm_env = env;
    warm_env["VGPU_CACHE_DIR"] = dir.string();
    (void)run_child(self, "matmul", size, warm_env);  // fills the directory
    const ChildResult warm = best_of(runs, self, "matmul", size, warm_env, false);
    std::filesystem::remove_all(dir);
    failures += open.us < 0 || cold.us < 0 || warm.us < 0;
    std::printf("%-10s %12s %12s %12s %12s\n", id.c_str(), ms(open.us).c_str(), ms(cold.us).c_str(),
                ms(warm.us).c_str(), open.us < 0 || warm.us < 0 ? "-" : ms_diff(warm.us - open.us).c_str());
  }

  std::printf("\nselection path (VGPU_DEVICE unset):\n");
  const std::map<std::string, std::string> sel{{"VGPU_DEVICE", ""}};
  std::map<std::string, std::string> on = sel, off = sel;
  on["VGPU_BACKGROUND"] = "1";
  off["VGPU_BACKGROUND"] = "0";
  const ChildResult cold_on = best_of(runs, self, "matmul", size, on, true);
  const ChildResult cold_off = best_of(runs, self, "matmul", size, off, true);
  const auto dir = fresh_dir("select");
  off["VGPU_CACHE_DIR"] = dir.string();
  on["VGPU_CACHE_DIR"] = dir.string();
  (void)run_child(self, "matmul", size, off);  // calibrates in the foreground and persists
  const ChildResult warm = best_of(runs, self, "matmul", size, on, false);
  std::filesystem::remove_all(dir);
  failures += cold_on.us < 0 || cold_off.us < 0 || warm.us < 0;
  std::printf("  cold, background on  (served by %-8s): %s\n", cold_on.device.c_str(), ms(cold_on.us).c_str());
  std::printf("  cold, background off (chose %-13s): %s\n", cold_off.device.c_str(), ms(cold_off.us).c_str());
  std::printf("  warm, persisted choice (%-16s): %s\n", warm.device.c_str(), ms(warm.us).c_str());
  if (cold_on.us > 0 && cold_off.us > 0)
    std::printf("  first call, background off / on: %.1fx\n", cold_off.us / cold_on.us);
  return failures ? 1 : 0;
}
