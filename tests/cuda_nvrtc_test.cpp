// tests/cuda_nvrtc_test.cpp — needs no GPU: NVRTC compiles every built-in CUDA kernel (with the
// defines and block sizes the op plans use) for sm_90 and for the oldest and newest SM this
// NVRTC supports, so CI on a CPU-only machine catches CUDA source errors. Exits 77 with the
// reason when NVRTC cannot be loaded.
#include "backends/cuda/cuda_nvrtc.hpp"

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "core/kernels/cuda_source.hpp"
#include "support/catch_session.hpp"
#include "support/expect_error.hpp"
#include "vgpu/vgpu.hpp"

namespace vgpu_test {
namespace {

const vgpu::cuda::NvrtcFns& nvrtc() { return *vgpu::cuda::load_nvrtc(nullptr); }

/// The plans of every built-in op on a CUDA device description (no device needed).
std::vector<vgpu::KernelPlan> cuda_plans() {
  vgpu::DeviceInfo dev;
  dev.backend = vgpu::BackendKind::cuda;
  dev.limits.max_workgroup_count = {2147483647u, 65535u, 65535u};
  return {vgpu::ops::matmul(dev, 67, 33, 129), vgpu::ops::axpy(dev, 1000),          vgpu::ops::add(dev, 1000),
          vgpu::ops::mul(dev, 1000),           vgpu::ops::reduce_sum(dev, 1000000), vgpu::ops::softmax_rows(dev, 3, 7)};
}

}  // namespace

TEST_CASE("every built-in op plan carries CUDA source and compiles for sm_90", "[cuda][nvrtc]") {
  for (const auto& plan : cuda_plans()) {
    INFO(plan.source.name);
    REQUIRE(!plan.source.cuda.empty());
    REQUIRE(!plan.source.cuda_entry.empty());
    const auto image = vgpu::cuda::compile_cuda(nvrtc(), plan.source, plan.options, 90);
    CHECK(image.size() > 4);
    CHECK(image[0] == 0x7f);  // an ELF cubin, not PTX
  }
}

TEST_CASE("every built-in CUDA kernel compiles for the oldest and newest supported SM", "[cuda][nvrtc]") {
  const auto& archs = nvrtc().archs;
  REQUIRE(!archs.empty());
  for (int sm : {archs.front(), archs.back()})
    for (const auto& k : vgpu::kernels::builtin_cuda_kernels()) {
      INFO(k.name << " for sm_" << sm);
      vgpu::KernelSource s;
      s.name = std::string(k.name);
      s.cuda = std::string(k.source);
      s.cuda_entry = std::string(k.entry);
      vgpu::CompileOptions o;
      o.workgroup_size = {256, 1, 1};
      CHECK(!vgpu::cuda::compile_cuda(nvrtc(), s, o, sm).empty());
    }
}

TEST_CASE("an SM newer than NVRTC knows falls back to PTX", "[cuda][nvrtc]") {
  vgpu::KernelSource s;
  s.name = "axpy";
  s.cuda = std::string(vgpu::kernels::builtin_cuda("axpy").source);
  s.cuda_entry = "vgpu_axpy";
  const auto image = vgpu::cuda::compile_cuda(nvrtc(), s, vgpu::CompileOptions{}, 999);
  const std::string text(image.begin(), image.end());
  CHECK(text.find(".entry vgpu_axpy") != std::string::npos);
  CHECK(image.back() == 0);
}

TEST_CASE("a CUDA syntax error is a compile_error with NVRTC's log", "[cuda][nvrtc]") {
  vgpu::KernelSource s;
  s.name = "test.broken";
  s.cuda = "extern \"C\" __global__ void f(float* x) {\n  x[0] = undefined_thing;\n}\n";
  s.cuda_entry = "f";
  REQUIRE_VGPU_ERROR(compile_error, "CUDA kernel 'test.broken' failed to compile:\n",
                     vgpu::cuda::compile_cuda(nvrtc(), s, vgpu::CompileOptions{}, 90));
  REQUIRE_VGPU_ERROR(compile_error, "undefined_thing",
                     vgpu::cuda::compile_cuda(nvrtc(), s, vgpu::CompileOptions{}, 90));
}

}  // namespace vgpu_test

int main(int argc, char* argv[]) {
  std::string why;
  if (!vgpu::cuda::load_nvrtc(&why)) {
    std::printf("SKIPPED cuda_nvrtc tests: %s\n", why.c_str());
    return 77;
  }
  return vgpu_test::run_catch_session(argc, argv);
}
