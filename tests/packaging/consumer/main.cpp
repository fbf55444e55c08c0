// SPDX-License-Identifier: Apache-2.0
// The packaging consumer: multiplies on the CPU device through the installed vgpu and checks
// the product, then catches, by type, a vgpu::Error thrown inside libvgpu (a bad shape): with
// hidden visibility that works only if libvgpu exports vgpu::Error's typeinfo (VGPU_API).
#include <cstdint>
#include <cstdio>
#include <string>
#include <vgpu/error.hpp>
#include <vgpu/inventory.hpp>
#include <vgpu/vgpu.hpp>

int main() {
  vgpu::Cache cache(vgpu::Runtime::global().open("cpu:0"));
  vgpu::Matrix a(3, 4, 1.0f), b(4, 2, 0.5f);
  a(1, 2) = 3.0f;
  vgpu::Matrix c = cache.matmul(a, b);
  // Row 1 is 1, 1, 3, 1 against 0.5s: 3; every other entry 4 * 0.5 = 2.
  for (std::uint32_t r = 0; r < c.rows; ++r) {
    for (std::uint32_t col = 0; col < c.cols; ++col) {
      const float want = r == 1 ? 3.0f : 2.0f;
      if (c(r, col) != want) {
        std::printf("FAIL: c(%u, %u) = %g, expected %g\n", r, col, c(r, col), want);
        return 1;
      }
    }
  }
  try {
    (void)cache.matmul(vgpu::Matrix(2, 3, 1.0f), vgpu::Matrix(2, 3, 1.0f));  // 3 != 2: bad shape
    std::printf("FAIL: a 2x3 by 2x3 matmul did not throw\n");
    return 1;
  } catch (const vgpu::Error& e) {
    const std::string what = e.what();
    if (what.find("Fix:") == std::string::npos) {
      std::printf("FAIL: the bad-shape error has no Fix: hint: %s\n", what.c_str());
      return 1;
    }
    std::printf("consumer: caught vgpu::Error (%s): %s\n", std::string(vgpu::to_string(e.category())).c_str(),
                what.c_str());
  } catch (const std::exception& e) {
    std::printf("FAIL: the bad shape threw a std::exception that is not a vgpu::Error: %s\n", e.what());
    return 1;
  }
  std::printf("consumer: vgpu %s, matmul ok\n", vgpu::version_string().c_str());
  return 0;
}
