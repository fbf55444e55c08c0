// SPDX-License-Identifier: Apache-2.0
// tests/conformance/main.cpp — the conformance runner. ctest runs it once per backend kind with
// VGPU_TEST_BACKENDS=<kind>; a backend that is not available here is reported as a skip with
// its reason (exit code 77, ctest's SKIP_RETURN_CODE), never as a silent pass.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <sstream>

#include "conformance/conformance.hpp"
#include "support/backend_under_test.hpp"
#include "support/catch_session.hpp"

namespace vgpu_test {
namespace {

std::mutex g_mutex;
std::set<std::string> g_exercised;

}  // namespace

std::vector<vgpu::Device> devices_under_test() {
  static const std::vector<vgpu::Device> devices = open_requested_devices();
  return devices;
}

void note_exercised(const vgpu::Device& device) {
  std::lock_guard lock(g_mutex);
  g_exercised.insert(device.info().id());
}

std::vector<std::string> exercised_devices() {
  std::lock_guard lock(g_mutex);
  return {g_exercised.begin(), g_exercised.end()};
}

}  // namespace vgpu_test

int main(int argc, char* argv[]) {
  std::vector<vgpu::BackendKind> kinds;
  std::vector<vgpu::BackendStatus> statuses;
  try {
    kinds = vgpu_test::requested_backend_kinds();
  } catch (const vgpu::Error& e) {
    std::fprintf(stderr, "conformance: bad VGPU_TEST_BACKENDS: %s\n", e.what());
    return 2;
  }
  try {
    statuses = vgpu::Runtime::global().backends();
  } catch (const vgpu::Error& e) {
    std::fprintf(stderr, "conformance: cannot start: %s\n", e.what());
    return 2;
  }
  if (!kinds.empty()) {
    int runnable = 0;
    for (vgpu::BackendKind kind : kinds) {
      const std::string name(vgpu::to_string(kind));
      auto st = std::find_if(statuses.begin(), statuses.end(), [&](const auto& s) { return s.kind == kind; });
      if (st == statuses.end()) {
        std::printf("SKIPPED conformance.%s: the registry does not know this backend\n", name.c_str());
      } else if (!st->available) {
        std::printf("SKIPPED conformance.%s: %s\n", name.c_str(), st->reason.c_str());
      } else {
        ++runnable;
      }
    }
    if (runnable == 0) return 77;
  }
  for (const vgpu::Device& d : vgpu_test::devices_under_test())
    std::printf("conformance: testing %s (%s, %s)\n", d.info().id().c_str(), d.info().name.c_str(),
                std::string(vgpu::to_string(d.info().type)).c_str());
  std::fflush(stdout);
  const int result = vgpu_test::run_catch_session(argc, argv);
  std::string ids;
  for (const auto& id : vgpu_test::exercised_devices()) ids += " " + id;
  std::printf("conformance: exercised devices:%s\n", ids.empty() ? " none" : ids.c_str());
  return result;
}
