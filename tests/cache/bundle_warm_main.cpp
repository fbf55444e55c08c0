// SPDX-License-Identifier: Apache-2.0
// tests/cache/bundle_warm_main.cpp — vgpu-bundle-warm: the workload of the cache-bundle round trip
// (tests/cache/cache_bundle_test.py), run as separate processes so that only the cache directory
// (VGPU_CACHE_DIR) carries anything from one run to the next.
//
//   vgpu-bundle-warm warm    compiles the scale-add user kernel on every device (CPU, and
//                            Vulkan / OpenGL where present) and a matmul selection; prints one
//                            "device <id> source_compiles=N l2_hits=M" line each
//   vgpu-bundle-warm check   the same calls; exit 0 only when no GPU device compiled from source,
//                            each had an L2 hit and the matmul selection was read from the cache
//                            ("persisted"); prints "SKIPPED: <why>" for a device kind not here
//
// Exit 2 on a usage error, 3 when a check failed or a call threw.
#include <cstdio>
#include <exception>
#include <string>

#include "support/scale_add_kernel.hpp"
#include "vgpu/vgpu.hpp"

int main(int argc, char** argv) {
  const std::string mode = argc == 2 ? argv[1] : "";
  if (mode != "warm" && mode != "check") {
    std::fprintf(stderr, "usage: vgpu-bundle-warm warm|check\n");
    return 2;
  }
  try {
    bool ok = true;
    int gpus = 0;
    vgpu::Runtime& runtime = vgpu::Runtime::global();
    for (const vgpu::BackendStatus& s : runtime.backends())
      if (!s.available && (s.kind == vgpu::BackendKind::vulkan || s.kind == vgpu::BackendKind::opengl))
        std::printf("SKIPPED %s: %s\n", std::string(vgpu::to_string(s.kind)).c_str(), s.reason.c_str());
    for (const vgpu::DeviceInfo& info : runtime.devices()) {
      vgpu::Device device = runtime.open(info);
      const vgpu::KernelSource source =
          vgpu_test::scale_add_source(info.backend, vgpu_test::scale_add_text(info.backend));
      const vgpu::Kernel kernel = device.compile(source, vgpu_test::scale_add_options());
      if (!vgpu_test::run_scale_add(device, kernel, 1000, 64).ok()) {
        std::printf("device %s: wrong scale-add result\n", info.id().c_str());
        ok = false;
      }
      const vgpu::CounterSnapshot c = device.counters();
      std::printf("device %s source_compiles=%llu l2_hits=%llu\n", info.id().c_str(),
                  static_cast<unsigned long long>(c.source_compiles), static_cast<unsigned long long>(c.l2_hits));
      // Only the run-time compiled GPU dialects go through L2; the CPU callable needs no compile.
      const bool gpu = info.backend == vgpu::BackendKind::vulkan || info.backend == vgpu::BackendKind::opengl;
      if (gpu) ++gpus;
      if (mode == "check" && gpu && (c.source_compiles != 0 || c.l2_hits == 0)) {
        std::printf("device %s: expected 0 source compiles and an L2 hit\n", info.id().c_str());
        ok = false;
      }
    }
    if (gpus == 0)
      std::printf("SKIPPED gpu: no Vulkan or OpenGL device here; only the CPU and the selection are checked\n");
    const vgpu::Shape shape{32, 32, 32};
    vgpu::select("matmul", shape);
    const vgpu::Selection sel = vgpu::explain("matmul", shape);
    std::printf("selection matmul %s\n", std::string(vgpu::to_string(sel.source)).c_str());
    if (mode == "check" && runtime.devices().size() > 1 && sel.source != vgpu::SelectionSource::persisted) {
      std::printf("selection: expected it to be read from the cache\n");
      ok = false;
    }
    return ok ? 0 : 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vgpu-bundle-warm: %s\n", e.what());
    return 3;
  }
}
