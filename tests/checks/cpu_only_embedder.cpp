// SPDX-License-Identifier: Apache-2.0
// tests/checks/cpu_only_embedder.cpp — vgpu-test-cpu-only-embedder: an application that uses
// only vgpu's public API through libvgpu.so. It prints each backend's status ("backend <kind>
// available|unavailable: <reason>"), then multiplies two 67x61 and 61x53 matrices on cpu:0 and
// checks the product against a double-precision reference. cpu_only_embedder_test.py runs it
// against a libvgpu with nothing but oneTBB and xxHash beside it.
#include <cmath>
#include <cstdio>
#include <exception>

#include "vgpu/vgpu.hpp"

int main() {
  try {
    for (const vgpu::BackendStatus& s : vgpu::Runtime::global().backends())
      std::printf("backend %s %s%s%s\n", std::string(vgpu::to_string(s.kind)).c_str(),
                  s.available ? "available" : "unavailable", s.reason.empty() ? "" : ": ", s.reason.c_str());
    vgpu::Matrix a(67, 61), b(61, 53);
    for (std::size_t i = 0; i < a.data.size(); ++i) a.data[i] = static_cast<float>((i * 7) % 13) - 6.0f;
    for (std::size_t i = 0; i < b.data.size(); ++i) b.data[i] = static_cast<float>((i * 5) % 11) - 5.0f;
    vgpu::Cache cache(vgpu::Runtime::global().open("cpu:0"));
    const vgpu::Matrix c = cache.matmul(a, b);
    double worst = 0;
    for (std::uint32_t i = 0; i < a.rows; ++i)
      for (std::uint32_t j = 0; j < b.cols; ++j) {
        double ref = 0;
        for (std::uint32_t p = 0; p < a.cols; ++p) ref += double{a(i, p)} * double{b(p, j)};
        worst = std::fmax(worst, std::fabs(ref - double{c(i, j)}));
      }
    std::printf("matmul on cpu:0: max error %g\n", worst);
    return worst <= 1e-3 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vgpu-test-cpu-only-embedder: %s\n", e.what());
    return 1;
  }
}
