// SPDX-License-Identifier: Apache-2.0
// tests/runtime/exit_child_main.cpp — vgpu-test-exit-child: a short process that ends while vgpu's
// background calibration may still be running (tests/runtime/exit_test.cpp, issue 29). Public API only.
//
//   vgpu-test-exit-child return|exit|runtime <hold> [settle]
//
// It runs the design's short flows: 100 Cache matmuls at N=16, a KernelDatabase at N=16 and
// N=32 (a call each), an error case (mismatched shapes) and the device list. Then it ends:
//   return  — returns from main: the Cache and the database are destroyed, then the exit
//             handlers run (Runtime::global() is never destroyed);
//   exit    — std::exit(0) with the Cache and the database still alive;
//   runtime — the flows (the database ones only: Cache always uses the global runtime) run on a
//             Runtime of its own, destroyed before main returns.
// <hold>: "-", or a device id whose first background calibration call is held in flight until
// the process ends (testing::hold_background_calibration): the child waits until the hold is
// reached before ending, so the end comes with driver work in flight at that exact point.
// settle: waits for the background calibrations to finish before ending (a warm cache next).
// Prints "held=<0|1> devices=<n> result=ok" on stdout; nothing else of its own. Exit 0; 2 on a
// usage error; 3 on a wrong result; 4 when vgpu threw; 5 when the hold was never reached.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "vgpu/testing.hpp"
#include "vgpu/vgpu.hpp"

namespace {

/// Returns whether every element of c is value.
bool all_equal(const std::vector<float>& c, float value) {
  for (float v : c)
    if (v != value) return false;
  return !c.empty();
}

/// Runs matmul at n×n×n on db (ones by twos); true when every element is 2n.
bool db_matmul_ok(vgpu::KernelDatabase& db, std::uint64_t n) {
  const std::vector<float> a(n * n, 1.0f), b(n * n, 2.0f);
  std::vector<float> c(n * n, 0.0f);
  const vgpu::TensorArg args[] = {vgpu::TensorArg(a.data(), {n, n}), vgpu::TensorArg(b.data(), {n, n}),
                                  vgpu::TensorArg(c.data(), {n, n})};
  db.call("matmul", {n, n, n}, args);
  return all_equal(c, 2.0f * static_cast<float>(n));
}

/// Waits until the background calibration reaches the hold (at most 120 s); false if it never does.
bool wait_for_hold() {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!vgpu::testing::background_calibration_held()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if ((argc != 3 && argc != 4) || (mode != "return" && mode != "exit" && mode != "runtime") ||
      (argc == 4 && std::string(argv[3]) != "settle")) {
    std::fprintf(stderr, "usage: vgpu-test-exit-child return|exit|runtime <device id to hold, or -> [settle]\n");
    return 2;
  }
  const std::string hold = argv[2];
  const bool settle = argc == 4;
  if (hold != "-") vgpu::testing::hold_background_calibration(hold);
  try {
    std::unique_ptr<vgpu::Runtime> own;
    if (mode == "runtime") own = std::make_unique<vgpu::Runtime>();
    vgpu::Runtime& runtime = own ? *own : vgpu::Runtime::global();
    bool ok = true;
    std::unique_ptr<vgpu::Cache> cache;
    if (!own) {
      cache = std::make_unique<vgpu::Cache>();
      const vgpu::Matrix a(16, 16, 1.0f), b(16, 16, 2.0f);
      vgpu::Matrix c;
      for (int i = 0; i < 100; ++i) c = cache->matmul(a, b);
      ok = all_equal(c.data, 32.0f) && cache->dispatches() == 100;
    }
    vgpu::KernelDatabase db(runtime);
    ok = db_matmul_ok(db, 16) && db_matmul_ok(db, 32) && ok;
    try {  // the error case: shapes that do not multiply
      const std::vector<float> a(12, 1.0f), b(30, 1.0f);
      std::vector<float> c(18, 0.0f);
      const vgpu::TensorArg args[] = {vgpu::TensorArg(a.data(), {3, 4}), vgpu::TensorArg(b.data(), {5, 6}),
                                      vgpu::TensorArg(c.data(), {3, 6})};
      db.call("matmul", {3, 4, 6}, args);
      ok = false;
    } catch (const vgpu::Error& e) {
      ok = ok && e.category() == vgpu::ErrorCategory::invalid_argument;
    }
    const std::size_t devices = runtime.devices().size();
    if (settle && !runtime.settle()) ok = false;
    const bool held = hold != "-" && wait_for_hold();
    if (hold != "-" && !held) {
      std::printf("held=0 result=no-hold\n");
      return 5;
    }
    std::printf("held=%d devices=%zu result=%s\n", held ? 1 : 0, devices, ok ? "ok" : "wrong");
    std::fflush(stdout);
    if (mode == "exit") std::exit(ok ? 0 : 3);  // cache, db and the global runtime stay alive
    return ok ? 0 : 3;
  } catch (const vgpu::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 4;
  }
}
