// SPDX-License-Identifier: Apache-2.0
// tests/selection/background_child_main.cpp — vgpu-test-background-child: a process that ends while a
// background calibration is in flight (tests/selection/background_test.cpp, "exits cleanly").
//
//   vgpu-test-background-child destroy|exit <salt>
//
// Over the test backend (test:0 typed as the CPU, test:1 a GPU whose compile is held until the
// line below is printed and then takes 1.5 s), it runs one axpy through a KernelDatabase (served
// by test:0 while test:1 is measured in the background), prints "source=<explain's source>
// result=ok" and then ends — with the background calibration in flight however slow the machine
// is, since the compile it waits for is only released then:
//   destroy — the Runtime goes out of scope (its destructor cancels and joins the work);
//   exit    — the Runtime is leaked, as Runtime::global() is, and std::exit(0) runs, so only the
//             exit handler stops the worker.
// Exit 0; 2 on a usage error; 3 on a wrong result; 4 when vgpu threw.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "support/test_backend.hpp"
#include "vgpu/vgpu.hpp"

namespace {

// Runs axpy at n = 1000 through db; true when every element is right.
bool axpy_ok(vgpu::KernelDatabase& db) {
  const std::uint64_t n = 1000;
  std::vector<float> a{2.0f}, x(n), y(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 17);
    y[i] = static_cast<float>(i % 5);
  }
  const vgpu::TensorArg args[] = {vgpu::TensorArg(std::as_const(a).data(), {1}),
                                  vgpu::TensorArg(std::as_const(x).data(), {n}), vgpu::TensorArg(y.data(), {n})};
  db.call("axpy", {n}, args);
  for (std::uint64_t i = 0; i < n; ++i)
    if (y[i] != 2.0f * static_cast<float>(i % 17) + static_cast<float>(i % 5)) return false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::string(argv[1]) != "destroy" && std::string(argv[1]) != "exit")) {
    std::cerr << "usage: vgpu-test-background-child destroy|exit <salt>\n";
    return 2;
  }
  const bool leak = std::string(argv[1]) == "exit";
  const auto knobs = vgpu_test::test_devices({3000, 0}, argv[2]);
  try {
    knobs[0]->type = vgpu::DeviceType::cpu;
    knobs[1]->type = vgpu::DeviceType::discrete_gpu;
    knobs[1]->hold_compile = true;  // released once explain() has answered: it sees the interim choice
    knobs[1]->compile_delay_ms = 1500;
    vgpu::RuntimeOptions o = vgpu_test::test_runtime_options(knobs);
    o.background = true;
    o.cache_enabled = false;
    auto* runtime = new vgpu::Runtime(o);
    bool ok = false;
    {
      vgpu::KernelDatabase db(*runtime);
      ok = axpy_ok(db);
    }
    const vgpu::Selection s = runtime->explain("axpy", {1000});
    std::printf("source=%s result=%s\n", vgpu::to_string(s.source), ok ? "ok" : "wrong");
    std::fflush(stdout);
    knobs[1]->hold_compile = false;   // the compile now takes its 1.5 s: still running at the end
    if (leak) std::exit(ok ? 0 : 3);  // the runtime is never destroyed
    delete runtime;
    return ok ? 0 : 3;
  } catch (const vgpu::Error& e) {
    knobs[1]->hold_compile = false;  // so that the end does not wait for a compile held forever
    std::cerr << e.what() << "\n";
    return 4;
  }
}
