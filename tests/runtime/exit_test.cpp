// SPDX-License-Identifier: Apache-2.0
// tests/runtime/exit_test.cpp — a process ends safely and silently whatever vgpu's background
// calibration is doing (issue 29): returning from main, std::exit() with everything alive, or a
// Runtime of its own destroyed, on every backend here, with an empty and with a warm cache.
//
// Each case runs vgpu-test-exit-child (tests/runtime/exit_child_main.cpp: the design's short flows) as
// a fresh process and asserts exit status 0, its result line, and NOTHING on stderr: a crash at
// exit shows as a signal's status (139), a warning about the cancelled work as stderr text.
//   - Held: the child holds the background calibration right before its first call on one
//     device (testing::hold_background_calibration) and ends once it is held, so the process
//     ends with that driver call in flight every time, not by chance. Before the fix, the exit
//     handlers of the libraries the calibration had loaded (lavapipe's LLVM, llvmpipe) ran
//     before vgpu's, which stops the thread: the call then ran in a torn-down driver (SIGSEGV),
//     or OpenGL's device was shut down under it ("failed while calibrating ... Fix: finish
//     using vgpu devices before the process exits").
//   - Short runs: the flows as they are, several times per backend set, the empty-cache ones
//     with whatever the background thread happens to be doing at the end (a probe, a compile,
//     a timed run), then warm-cache ones after a run that settled.
// The children's Mesa shader cache is off, so every driver compile is real (a fresh machine).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/cache_fixtures.hpp"
#include "support/catch.hpp"
#include "support/helper_path.hpp"
#include "vgpu/vgpu.hpp"

#ifndef VGPU_EXIT_CHILD
#error "VGPU_EXIT_CHILD (path of vgpu-test-exit-child) must be defined by the build"
#endif

namespace {

using vgpu::test::quoted;
using vgpu::test::TempDir;

/// What one child run did.
struct Run {
  int status = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

/// Runs vgpu-test-exit-child with args, the L2 store in cache_dir and VGPU_BACKEND=backends
/// (unset when empty), nothing else of this process's vgpu settings.
Run run_child(const std::string& args, const std::filesystem::path& cache_dir, const std::string& backends) {
  const std::filesystem::path err_file = cache_dir.parent_path() / (cache_dir.filename().string() + ".stderr");
  const std::string command =
      "env -u VGPU_DEVICE -u VGPU_BACKEND -u VGPU_BACKGROUND -u VGPU_LOG -u VGPU_CACHE_DISABLE "
      "-u VGPU_VULKAN_VALIDATION MESA_SHADER_CACHE_DISABLE=true VGPU_CACHE_DIR=" +
      quoted(cache_dir.string()) + (backends.empty() ? "" : " VGPU_BACKEND=" + backends) + " " +
      quoted(vgpu::test::helper_path(VGPU_EXIT_CHILD)) + " " + args + " 2>" + quoted(err_file.string());
  Run run;
  std::tie(run.status, run.out) = vgpu::test::run_command(command);
  std::ifstream in(err_file);
  std::ostringstream text;
  text << in.rdbuf();
  run.err = text.str();
  std::filesystem::remove(err_file);
  return run;
}

/// Checks one run: exit 0, the result line, nothing on stderr.
void check_clean(const Run& run, const std::string& what) {
  INFO(what << "\nstdout:\n" << run.out << "stderr:\n" << run.err);
  CHECK(run.status == 0);
  CHECK(run.out.find("result=ok") != std::string::npos);
  CHECK(run.err.empty());
}

/// The GPU backends available here (each named as VGPU_BACKEND names it); a missing one is
/// reported as skipped, with its reason.
std::vector<std::string> gpu_backends_here() {
  std::vector<std::string> here;
  vgpu::Runtime runtime;
  for (const vgpu::BackendStatus& st : runtime.backends()) {
    if (st.kind == vgpu::BackendKind::cpu) continue;
    if (st.available)
      here.emplace_back(vgpu::to_string(st.kind));
    else
      WARN("SKIPPED for " << vgpu::to_string(st.kind) << ": " << st.reason);
  }
  return here;
}

const char* const kModes[] = {"return", "exit", "runtime"};

}  // namespace

TEST_CASE("a process ends cleanly with a background calibration call in flight on each device", "[exit]") {
  // (hold device, VGPU_BACKEND): each GPU beside the CPU; the CPU with every backend on, since
  // with the CPU alone there is nothing to time.
  std::vector<std::pair<std::string, std::string>> cases = {{"cpu:0", ""}};
  for (const std::string& backend : gpu_backends_here()) cases.emplace_back(backend + ":0", "cpu," + backend);
  TempDir tmp("exit-held");
  int n = 0;
  for (const auto& [device, backends] : cases)
    for (const char* mode : kModes) {
      const std::filesystem::path cache = tmp.path / ("c" + std::to_string(n++));
      const Run run = run_child(std::string(mode) + " " + device, cache, backends);
      check_clean(run, std::string(mode) + ", held on " + device + ", VGPU_BACKEND=" + backends);
      CHECK(run.out.find("held=1") != std::string::npos);
    }
}

TEST_CASE("short runs end cleanly on every backend, with an empty and a warm cache", "[exit]") {
  std::vector<std::string> sets = {"cpu"};
  const std::vector<std::string> gpus = gpu_backends_here();
  for (const std::string& backend : gpus) sets.push_back("cpu," + backend);
  if (gpus.size() > 1) sets.emplace_back();  // every backend
  constexpr int kRuns = 8;                   // per set and cache state; the empty-cache ones vary where the end falls
  TempDir tmp("exit-short");
  int n = 0;
  for (const std::string& backends : sets) {
    INFO("VGPU_BACKEND=" << (backends.empty() ? "(unset)" : backends));
    for (int i = 0; i < kRuns; ++i) {
      const std::string mode = kModes[i % 3];
      check_clean(run_child(mode + " -", tmp.path / ("e" + std::to_string(n++)), backends), "empty cache, " + mode);
    }
    const std::filesystem::path warm = tmp.path / ("w" + std::to_string(n++));
    check_clean(run_child("return - settle", warm, backends), "the run that settles");
    for (int i = 0; i < kRuns; ++i) {
      const std::string mode = kModes[i % 3];
      check_clean(run_child(mode + " -", warm, backends), "warm cache, " + mode);
    }
  }
}
