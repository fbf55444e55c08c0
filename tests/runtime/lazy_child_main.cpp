// SPDX-License-Identifier: Apache-2.0
// tests/runtime/lazy_child_main.cpp — vgpu-test-lazy-child: the fresh process of the lazy-backend tests
// (tests/runtime/lazy_backends_test.cpp). Public API only, so it also builds against an older libvgpu.so
// (to see the tests fail there).
//
//   vgpu-test-lazy-child matmul     one 16x16 Cache::matmul through Runtime::global() (the
//                                   parent sets VGPU_DEVICE=cpu:0)
//   vgpu-test-lazy-child options    the same through a Runtime whose RuntimeOptions::forced_device
//                                   is cpu:0 (the parent leaves VGPU_DEVICE unset)
//   vgpu-test-lazy-child select     the same with no device forced: the selection's choice (the
//                                   parent gives it a private VGPU_CACHE_DIR, so the first run
//                                   calibrates — in the background while the CPU serves, waited
//                                   for with Runtime::settle() — and later ones follow the
//                                   persisted choice)
//   vgpu-test-lazy-child devices    Runtime::global().devices() and backends() (enumeration)
//
// Then prints one line, read from /proc/self/maps after the work:
//   mode=<m> device=<id or -> source=<selection source or -> libvulkan=<0|1> libEGL=<0|1> libcuda=<0|1>
//   cuda=<0|1> vulkan=<0|1> opengl=<0|1> result=ok
// where lib*=1 means that vendor library is mapped into the process, and the backend values
// (devices mode only; "-" otherwise, since asking would probe them) say which are available.
// Exit 0, 2 on a usage error, 3 on a wrong result, 4 when vgpu threw (the message on stderr).
#include <cstdio>
#include <fstream>
#include <string>

#include "vgpu/vgpu.hpp"

namespace {

/// Whether a mapping of /proc/self/maps names a file whose name holds needle. The needles name
/// the loaders ("libvulkan.so", not "libvulkan"): a driver the sanitizer run preloads
/// (libvulkan_lvp.so) is not the Vulkan loader that vgpu loads at run time.
bool mapped(const std::string& needle) {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);)
    if (const auto slash = line.rfind('/'); slash != std::string::npos && line.find(needle, slash) != std::string::npos)
      return true;
  return false;
}

/// Runs a 16x16 matmul of ones by twos on cache; returns whether every element is 32.
bool matmul_ok(vgpu::Cache& cache) {
  const vgpu::Matrix a(16, 16, 1.0f), b(16, 16, 2.0f);
  const vgpu::Matrix c = cache.matmul(a, b);
  for (float v : c.data)
    if (v != 32.0f) return false;
  return c.data.size() == 256;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: vgpu-test-lazy-child matmul|options|select|devices\n");
    return 2;
  }
  const std::string mode = argv[1];
  std::string device = "-", source = "-", cuda = "-", vulkan = "-", opengl = "-";
  try {
    if (mode == "matmul" || mode == "select") {
      vgpu::Cache cache;
      if (!matmul_ok(cache)) return 3;
      // A first process lives until its background calibration is done, so that it persists.
      if (mode == "select" && !vgpu::Runtime::global().settle()) return 4;
      const vgpu::Selection s = vgpu::Runtime::global().explain("matmul", {16, 16, 16});
      device = s.device;
      source = vgpu::to_string(s.source);
    } else if (mode == "options") {
      vgpu::RuntimeOptions options = vgpu::RuntimeOptions::from_env();
      options.forced_device = "cpu:0";
      vgpu::Runtime runtime(options);
      const vgpu::Device d = runtime.default_device();
      vgpu::Cache cache(d);
      if (!matmul_ok(cache)) return 3;
      device = d.info().id();
    } else if (mode == "devices") {
      auto& runtime = vgpu::Runtime::global();
      device = std::to_string(runtime.devices().size()) + "found";
      for (const vgpu::BackendStatus& s : runtime.backends()) {
        const std::string v = s.available ? "1" : "0";
        if (s.kind == vgpu::BackendKind::cuda) cuda = v;
        if (s.kind == vgpu::BackendKind::vulkan) vulkan = v;
        if (s.kind == vgpu::BackendKind::opengl) opengl = v;
        if (!s.available)
          std::printf("unavailable %s: %s\n", std::string(vgpu::to_string(s.kind)).c_str(), s.reason.c_str());
      }
    } else {
      std::fprintf(stderr, "unknown mode '%s'\n", mode.c_str());
      return 2;
    }
  } catch (const vgpu::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 4;
  }
  std::printf("mode=%s device=%s source=%s libvulkan=%d libEGL=%d libcuda=%d cuda=%s vulkan=%s opengl=%s result=ok\n",
              mode.c_str(), device.c_str(), source.c_str(), mapped("libvulkan.so") ? 1 : 0, mapped("libEGL.so") ? 1 : 0,
              mapped("libcuda.so") ? 1 : 0, cuda.c_str(), vulkan.c_str(), opengl.c_str());
  return 0;
}
