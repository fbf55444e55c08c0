// SPDX-License-Identifier: Apache-2.0
// tests/runtime/backend_child_main.cpp — vgpu-test-backend-child: the second process of the
// cross-process cache tests of the backend suite (tests/contract/l2_*_test.cpp and the
// backends' own vulkan_test.cpp, vulkan_l2_mutation_test.cpp, opengl_test.cpp; run through
// tests/support/backend_child.hpp).
//
//   vgpu-test-backend-child <backend> <source-file> <n>      (backend: vulkan, opengl or cuda)
//
// Opens <backend>:0 (its L2 store comes from the environment: VGPU_CACHE_DIR,
// VGPU_CACHE_DISABLE; OpenGL's program binaries also need Mesa's shader cache on:
// MESA_SHADER_CACHE_DIR, and MESA_SHADER_CACHE_DISABLE=true turns them off), compiles the text
// in <source-file> as the scale-add user kernel of tests/support/scale_add_kernel.hpp in that
// backend's dialect (a GLSL body for vulkan and opengl, CUDA C for cuda) with a 64-wide
// workgroup, runs it on n elements, checks every element against a double reference, and
// prints one line of key=value pairs:
//   source_compiles=.. l2_hits=.. l2_misses=.. l2_writes=.. l2_rejected=.. l3_hits=.. compiles=..
//   [program_binary=0|1] store_hits=.. store_misses=.. store_writes=..
//   store_rejected=<reason>:<count>,...|none result=ok|wrong
// (device counters after the run; program_binary, for opengl only, says whether the driver
// offers binary formats; store_* are DiskStore::global().stats(), reasons with spaces written
// as '_'). Exit 0 when the result is right, 3 when it is wrong, 4 when vgpu threw (the message
// goes to stderr), 2 on a usage error, 77 when there is no such device.
//
// The kernel comes from scale_add_kernel.hpp, as in the suite, so both sides compute the same
// cache key (the tests check that they agree).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <string>
#include <string_view>

#include "support/scale_add_kernel.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/vgpu.hpp"

namespace {

constexpr const char* kUsage = "usage: vgpu-test-backend-child vulkan|opengl|cuda <source-file> <n>";

std::string reasons(const std::map<std::string, std::uint64_t>& rejected) {
  std::string out;
  for (const auto& [reason, count] : rejected) {
    std::string r = reason;
    for (char& c : r)
      if (c == ' ' || c == ',' || c == '=' || c == ':') c = '_';
    out += (out.empty() ? "" : ",") + r + ":" + std::to_string(count);
  }
  return out.empty() ? "none" : out;
}

int run(vgpu::BackendKind backend, const std::string& text, std::uint32_t n) {
  const std::string name(vgpu::to_string(backend));
  vgpu::RuntimeOptions options;
  options.allowed = {backend};
  vgpu::Runtime runtime(options);
  for (const auto& st : runtime.backends())
    if (st.kind == backend && !st.available) {
      std::cerr << name << " unavailable: " << st.reason << std::endl;
      return 77;
    }
  if (runtime.devices().empty()) {
    std::cerr << "no " << name << " device was found" << std::endl;
    return 77;
  }
  vgpu::Device device = runtime.open(name + ":0");

  const vgpu::Kernel kernel =
      device.compile(vgpu_test::scale_add_source(backend, text), vgpu_test::scale_add_options());
  const vgpu_test::ScaleAddResult result = vgpu_test::run_scale_add(device, kernel, n, 64);

  const vgpu::CounterSnapshot c = device.counters();
  const vgpu::cache::DiskStoreStats s = vgpu::cache::DiskStore::global().stats();
  std::cout << "source_compiles=" << c.source_compiles << " l2_hits=" << c.l2_hits << " l2_misses=" << c.l2_misses
            << " l2_writes=" << c.l2_writes << " l2_rejected=" << c.l2_rejected << " l3_hits=" << c.l3_hits
            << " compiles=" << c.compiles;
  // Only OpenGL's L2 depends on a driver feature (binary formats); the OpenGL tests check it.
  if (backend == vgpu::BackendKind::opengl) {
    const auto& features = device.info().features;
    const bool binaries = std::find(features.begin(), features.end(), "program_binary") != features.end();
    std::cout << " program_binary=" << (binaries ? 1 : 0);
  }
  std::cout << " store_hits=" << s.hits << " store_misses=" << s.misses << " store_writes=" << s.writes
            << " store_rejected=" << reasons(s.rejected) << " result=" << (result.ok() ? "ok" : "wrong") << std::endl;
  if (!result.ok())
    std::cerr << result.values.describe() << "; " << result.guard_changed << " guard elements past n were written"
              << std::endl;
  return result.ok() ? 0 : 3;
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc != 4) {
    std::cerr << kUsage << std::endl;
    return 2;
  }
  const std::string_view backend_name = argv[1];
  vgpu::BackendKind backend;
  if (backend_name == "vulkan")
    backend = vgpu::BackendKind::vulkan;
  else if (backend_name == "opengl")
    backend = vgpu::BackendKind::opengl;
  else if (backend_name == "cuda")
    backend = vgpu::BackendKind::cuda;
  else {
    std::cerr << "unknown backend '" << backend_name << "'; " << kUsage << std::endl;
    return 2;
  }
  std::ifstream in(argv[2], std::ios::binary);
  if (!in) {
    std::cerr << "cannot read " << argv[2] << std::endl;
    return 2;
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const long n = std::strtol(argv[3], nullptr, 10);
  if (n <= 0) {
    std::cerr << "n must be positive" << std::endl;
    return 2;
  }
  try {
    return run(backend, text, static_cast<std::uint32_t>(n));
  } catch (const vgpu::Error& e) {
    std::cerr << "vgpu error: " << e.what() << std::endl;
    return 4;
  }
}
