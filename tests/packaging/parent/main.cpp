// SPDX-License-Identifier: Apache-2.0
// The parent project's application: one product on the CPU device through the vgpu it built
// as a subproject, beside a call into its own library.
#include <cstdio>
#include <vgpu/inventory.hpp>
#include <vgpu/vgpu.hpp>

int parent_answer();

int main() {
  vgpu::Cache cache(vgpu::Runtime::global().open("cpu:0"));
  const vgpu::Matrix c = cache.matmul(vgpu::Matrix(2, 3, 1.0f), vgpu::Matrix(3, 2, 2.0f));
  if (c(0, 0) != 6.0f || c(1, 1) != 6.0f) {
    std::printf("FAIL: the product is %g, %g; expected 6\n", c(0, 0), c(1, 1));
    return 1;
  }
  std::printf("parent: vgpu %s as a subproject, matmul ok, parent_answer %d\n", vgpu::version_string().c_str(),
              parent_answer());
  return 0;
}
