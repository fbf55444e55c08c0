// tests/opengl_child_main.cpp — vgpu-test-opengl-child: the second process of the OpenGL
// cross-process cache tests (tests/opengl_test.cpp).
//
//   vgpu-test-opengl-child <glsl-file> <n>
//
// Opens opengl:0 (its L2 store comes from the environment: VGPU_CACHE_DIR, VGPU_CACHE_DISABLE;
// Mesa's program binaries need its shader cache on: MESA_SHADER_CACHE_DIR, and
// MESA_SHADER_CACHE_DISABLE=true turns them off), compiles the GLSL body in <glsl-file> as the
// user kernel "test.gl_scale_add"
//   out[i] = a[i] * p.scale + b[i]   (slots 0 = a, 1 = b read; 2 = out write;
//                                     params {uint n; float scale; uint pad0, pad1})
// with a 64-wide workgroup, runs it on n elements, checks every element against a double
// reference, and prints one line of key=value pairs:
//   source_compiles=.. l2_hits=.. l2_misses=.. l2_writes=.. l2_rejected=.. compiles=..
//   program_binary=0|1 store_hits=.. store_misses=.. store_writes=..
//   store_rejected=<reason>:<count>,...|none result=ok|wrong
// (device counters after the run; program_binary says whether the driver offers binary
// formats; store_* are DiskStore::global().stats(), reasons with spaces written as '_').
// Exit 0 when the result is right, 3 when it is wrong, 4 when vgpu threw (the message goes to
// stderr), 2 on a usage error, 77 when there is no OpenGL device.
//
// The KernelSource built here must stay identical to make_source() in opengl_test.cpp, which
// computes the same cache key in-process.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "vgpu/cache/disk_store.hpp"
#include "vgpu/vgpu.hpp"

namespace {

struct ScaleAddParams {
  std::uint32_t n;
  float scale;
  std::uint32_t pad0, pad1;
};

vgpu::KernelSource make_source(const std::string& glsl) {
  auto n_floats = [](const vgpu::ParamsBlock& pb, const vgpu::Groups&) -> std::uint64_t {
    return std::uint64_t{pb.as<ScaleAddParams>().n} * 4;
  };
  vgpu::KernelSource s;
  s.name = "test.gl_scale_add";
  s.glsl = glsl;
  s.bindings = {{0, vgpu::Access::read, "a", n_floats},
                {1, vgpu::Access::read, "b", n_floats},
                {2, vgpu::Access::write, "out", n_floats}};
  s.params_size = sizeof(ScaleAddParams);
  return s;
}

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

int run(const std::string& glsl, std::uint32_t n) {
  vgpu::RuntimeOptions options;
  options.allowed = {vgpu::BackendKind::opengl};
  vgpu::Runtime runtime(options);
  for (const auto& st : runtime.backends())
    if (st.kind == vgpu::BackendKind::opengl && !st.available) {
      std::cerr << "opengl unavailable: " << st.reason << std::endl;
      return 77;
    }
  vgpu::Device device = runtime.open("opengl:0");
  const auto& features = device.info().features;
  const bool binaries = std::find(features.begin(), features.end(), "program_binary") != features.end();

  vgpu::CompileOptions compile_options;
  compile_options.workgroup_size = {64, 1, 1};
  vgpu::Kernel kernel = device.compile(make_source(glsl), compile_options);

  std::vector<float> a(n), b(n), out(n, std::nanf(""));
  for (std::uint32_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i % 97) * 0.125f - 6.0f;
    b[i] = static_cast<float>(i % 31) * -0.5f + 3.0f;
  }
  const float scale = 1.75f;
  vgpu::Buffer ba = device.create_buffer(n * 4ull), bb = device.create_buffer(n * 4ull),
               bo = device.create_buffer(n * 4ull);
  device.write(ba, a.data(), n * 4ull);
  device.write(bb, b.data(), n * 4ull);
  device.write(bo, out.data(), n * 4ull);
  device.dispatch(kernel, device.bind(kernel, {{0, ba}, {1, bb}, {2, bo}}),
                  vgpu::ParamsBlock::of(ScaleAddParams{n, scale, 0, 0}), vgpu::Groups{(n + 63) / 64, 1, 1});
  device.read(bo, out.data(), n * 4ull);
  std::uint32_t wrong = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    const double want = static_cast<double>(a[i]) * scale + b[i];
    const double bound = 2.4e-7 * (std::abs(static_cast<double>(a[i]) * scale) + std::abs(static_cast<double>(b[i])));
    if (!(std::abs(out[i] - want) <= bound)) ++wrong;
  }

  const vgpu::CounterSnapshot c = device.counters();
  const vgpu::cache::DiskStoreStats s = vgpu::cache::DiskStore::global().stats();
  std::cout << "source_compiles=" << c.source_compiles << " l2_hits=" << c.l2_hits << " l2_misses=" << c.l2_misses
            << " l2_writes=" << c.l2_writes << " l2_rejected=" << c.l2_rejected << " compiles=" << c.compiles
            << " program_binary=" << (binaries ? 1 : 0) << " store_hits=" << s.hits << " store_misses=" << s.misses
            << " store_writes=" << s.writes << " store_rejected=" << reasons(s.rejected)
            << " result=" << (wrong == 0 ? "ok" : "wrong") << std::endl;
  if (wrong != 0) std::cerr << wrong << " of " << n << " elements are wrong" << std::endl;
  return wrong == 0 ? 0 : 3;
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc != 3) {
    std::cerr << "usage: vgpu-test-opengl-child <glsl-file> <n>" << std::endl;
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::cerr << "cannot read " << argv[1] << std::endl;
    return 2;
  }
  const std::string glsl((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const long n = std::strtol(argv[2], nullptr, 10);
  if (n <= 0) {
    std::cerr << "n must be positive" << std::endl;
    return 2;
  }
  try {
    return run(glsl, static_cast<std::uint32_t>(n));
  } catch (const vgpu::Error& e) {
    std::cerr << "vgpu error: " << e.what() << std::endl;
    return 4;
  }
}
