// SPDX-License-Identifier: Apache-2.0
// tests/queue/main.cpp — the queue suite's runner. ctest runs it once per backend kind with
// VGPU_TEST_BACKENDS=<kind>; a backend that is not available here is reported as a skip with
// its reason (exit code 77, ctest's SKIP_RETURN_CODE), never as a silent pass.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "queue/queue_suite.hpp"
#include "support/backend_under_test.hpp"
#include "support/catch_session.hpp"

namespace vgpu_test {

std::vector<vgpu::Device> queue_devices() {
  static const std::vector<vgpu::Device> devices = open_requested_devices();
  return devices;
}

}  // namespace vgpu_test

int main(int argc, char* argv[]) {
  try {
    const auto kinds = vgpu_test::requested_backend_kinds();
    const auto statuses = vgpu::Runtime::global().backends();
    int runnable = kinds.empty() ? 1 : 0;
    for (vgpu::BackendKind kind : kinds) {
      const std::string name(vgpu::to_string(kind));
      auto st = std::find_if(statuses.begin(), statuses.end(), [&](const auto& s) { return s.kind == kind; });
      if (st == statuses.end())
        std::printf("SKIPPED queue.%s: the registry does not know this backend\n", name.c_str());
      else if (!st->available)
        std::printf("SKIPPED queue.%s: %s\n", name.c_str(), st->reason.c_str());
      else
        ++runnable;
    }
    if (runnable == 0) return 77;
    for (const vgpu::Device& d : vgpu_test::queue_devices())
      std::printf("queue: testing %s (%s)\n", d.info().id().c_str(), d.info().name.c_str());
  } catch (const vgpu::Error& e) {
    std::fprintf(stderr, "queue: cannot start: %s\n", e.what());
    return 2;
  }
  std::fflush(stdout);
  return vgpu_test::run_catch_session(argc, argv);
}
