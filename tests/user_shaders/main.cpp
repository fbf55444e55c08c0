// SPDX-License-Identifier: Apache-2.0
// tests/user_shaders/main.cpp — the user-shader runner. ctest runs it once per GPU backend kind
// with VGPU_TEST_BACKENDS=<kind>; a kind with no device here is reported as a skip with its
// reason (exit code 77, ctest's SKIP_RETURN_CODE), never as a silent pass.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "support/catch_session.hpp"
#include "user_shaders/corpus.hpp"

namespace vgpu_test {

std::vector<vgpu::BackendKind> requested_kinds() {
  std::vector<vgpu::BackendKind> kinds;
  const char* env = std::getenv("VGPU_TEST_BACKENDS");
  std::stringstream ss(env ? env : "");
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) kinds.push_back(vgpu::parse_backend_kind(item));
  if (kinds.empty()) kinds = {vgpu::BackendKind::vulkan, vgpu::BackendKind::opengl};
  return kinds;
}

std::vector<vgpu::Device> devices_under_test() {
  static const std::vector<vgpu::Device> devices = [] {
    const auto kinds = requested_kinds();
    std::vector<vgpu::Device> out;
    for (const vgpu::DeviceInfo& info : vgpu::Runtime::global().devices())
      if (std::find(kinds.begin(), kinds.end(), info.backend) != kinds.end())
        out.push_back(vgpu::Runtime::global().open(info));
    return out;
  }();
  return devices;
}

}  // namespace vgpu_test

int main(int argc, char* argv[]) {
  std::vector<vgpu::BackendKind> kinds;
  try {
    kinds = vgpu_test::requested_kinds();
    const auto statuses = vgpu::Runtime::global().backends();
    int runnable = 0;
    for (vgpu::BackendKind kind : kinds) {
      const std::string name(vgpu::to_string(kind));
      auto st = std::find_if(statuses.begin(), statuses.end(), [&](const auto& s) { return s.kind == kind; });
      if (kind != vgpu::BackendKind::vulkan && kind != vgpu::BackendKind::opengl)
        std::printf("SKIPPED user_shaders.%s: the corpus is GLSL/SPIR-V, for Vulkan and OpenGL only\n", name.c_str());
      else if (st == statuses.end())
        std::printf("SKIPPED user_shaders.%s: this build has no %s backend\n", name.c_str(), name.c_str());
      else if (!st->available)
        std::printf("SKIPPED user_shaders.%s: %s\n", name.c_str(), st->reason.c_str());
      else
        ++runnable;
    }
    if (runnable == 0 || vgpu_test::devices_under_test().empty()) {
      std::printf("SKIPPED user_shaders: no Vulkan or OpenGL device to run the corpus on\n");
      return 77;
    }
  } catch (const vgpu::Error& e) {
    std::fprintf(stderr, "user_shaders: cannot start: %s\n", e.what());
    return 2;
  }
  for (const vgpu::Device& d : vgpu_test::devices_under_test())
    std::printf("user_shaders: testing %s (%s)\n", d.info().id().c_str(), d.info().name.c_str());
  if (vgpu_test::forms().size() < 2)
    std::printf("user_shaders: glslc was not found at build time: SPIR-V form not tested\n");
  std::fflush(stdout);
  const int result = vgpu_test::run_catch_session(argc, argv);
  for (const std::string& line : vgpu_test::tally()) std::printf("user_shaders: %s\n", line.c_str());
  return result;
}
