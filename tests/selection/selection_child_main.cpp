// SPDX-License-Identifier: Apache-2.0
// tests/selection/selection_child_main.cpp — vgpu-test-select-child: the second process of the
// selection persistence tests (tests/selection/selection_test.cpp).
//
//   vgpu-test-select-child [--noise PCT] [--spike K] [--seed S] <salt> <latency_us>...
//
// Builds a runtime over the test backend only, one device per latency (all with fingerprint
// salt <salt>), asks for the selection of axpy at n = 1000 (its L2 store comes from the
// environment: VGPU_CACHE_DIR, VGPU_CACHE_DISABLE) and prints one line:
//   source=<calibrated|persisted|...> device=<id> dispatches=<d0>,<d1>,... result=ok
// where d_i is how many dispatches device i ran (0 everywhere: nothing was calibrated).
// --noise and --spike set every device's noise_pct and spike_every knobs (test_backend.hpp),
// so that the stability tests can run many fresh processes, each with its own noise; --seed
// makes that noise repeatable (process i of a test passes seed i: a failure reruns as it ran).
// Exit 0, 2 on a usage error, 4 when vgpu threw (the message goes to stderr).
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "support/test_backend.hpp"
#include "vgpu/vgpu.hpp"

int main(int argc, char** argv) {
  int noise = 0, spike = 0, first = 1;
  std::uint64_t seed = 0;
  for (; first + 1 < argc && std::string(argv[first]).starts_with("--"); first += 2) {
    const std::string opt = argv[first];
    if (opt == "--noise")
      noise = std::atoi(argv[first + 1]);
    else if (opt == "--spike")
      spike = std::atoi(argv[first + 1]);
    else if (opt == "--seed")
      seed = std::strtoull(argv[first + 1], nullptr, 10);
    else
      break;
  }
  if (argc - first < 2 || std::string(argv[first]).starts_with("--")) {
    std::cerr << "usage: vgpu-test-select-child [--noise PCT] [--spike K] [--seed S] <salt> <latency_us>...\n";
    return 2;
  }
  try {
    std::vector<std::shared_ptr<vgpu_test::TestDeviceKnobs>> knobs;
    for (int i = first + 1; i < argc; ++i) {
      knobs.push_back(vgpu_test::test_device(std::strtoull(argv[i], nullptr, 10), argv[first]));
      knobs.back()->noise_pct = noise;
      knobs.back()->spike_every = spike;
      knobs.back()->noise_seed = seed;
    }
    vgpu::Runtime runtime(vgpu_test::test_runtime_options(knobs));
    const vgpu::Selection s = runtime.explain("axpy", {1000});
    std::string counts;
    for (const auto& k : knobs) counts += (counts.empty() ? "" : ",") + std::to_string(k->dispatches.load());
    std::cerr << s.describe();  // for a failing test's output: each candidate's time and note
    std::printf("source=%s device=%s dispatches=%s result=ok\n", vgpu::to_string(s.source), s.device.c_str(),
                counts.c_str());
    return 0;
  } catch (const vgpu::Error& e) {
    std::cerr << e.what() << "\n";
    return 4;
  }
}
