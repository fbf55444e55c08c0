// SPDX-License-Identifier: Apache-2.0
// tools/demo/readme_example.cpp — vgpu-example: the usage example shown in README.md, built
// with the tools so the README's code always compiles. Keep the two in sync.
#include <cstdio>
#include <vector>
#include <vgpu/vgpu.hpp>

/// Multiplies through Cache, then runs axpy through a PersistentKernel; exits 1 on a wrong result.
int main() {
  // The seed's drop-in: runs each shape on the device measured fastest for it (calibrated on
  // the first call, remembered across processes), builds a kernel once per shape, reuses it.
  vgpu::Cache cache;
  vgpu::Matrix a(16, 16, 1.0f), b(16, 16, 2.0f);
  vgpu::Matrix c = cache.matmul(a, b);  // every c(i, j) is 32
  std::printf("%s on %s\n", cache.report().c_str(), cache.device().info().id().c_str());

  // One level down: compile, allocate and bind once; each call only uploads, dispatches and
  // reads back. axpy computes y = alpha*x + y.
  const std::uint64_t n = 1000;
  vgpu::Device device = vgpu::select("axpy", {n});  // or Runtime::global().open("vulkan:0")
  vgpu::PersistentKernel axpy(device, vgpu::ops::axpy(device.info(), n));
  const float alpha = 2.0f;
  std::vector<float> x(n, 1.0f), y(n, 3.0f);
  axpy({vgpu::TensorArg(&alpha, {1}), vgpu::TensorArg(x.data(), {n}), vgpu::TensorArg(y.data(), {n})});
  std::printf("y[0] = %g after %llu call(s)\n", y[0], static_cast<unsigned long long>(axpy.calls()));  // 5

  return c(0, 0) == 32.0f && y[0] == 5.0f ? 0 : 1;
}
