// SPDX-License-Identifier: Apache-2.0
// tests/backends/cpu_spec_test.cpp — a CPU callable gets its compile's specialization constants
// (CpuWorkgroup::spec_constants, read with spec(id | name, fallback)), converted to the type it
// asks for; a constant the compile did not set reads as the fallback.
#include "support/catch.hpp"
#include <vector>

#include "vgpu/vgpu.hpp"

namespace {

// Writes what it reads from its spec constants into slot 0 (as floats).
void spec_probe(const vgpu::CpuWorkgroup& wg) {
  float* out = wg.buffer<float>(0);
  out[0] = static_cast<float>(wg.spec(0u, 111u));        // by id
  out[1] = static_cast<float>(wg.spec(7u, -1));          // by id, signed
  out[2] = wg.spec("SCALE", 0.0f);                       // by name
  out[3] = wg.spec("FLAG", false) ? 1.0f : 0.0f;         // bool by name
  out[4] = static_cast<float>(wg.spec("MISSING", 42u));  // not set: the fallback
  out[5] = static_cast<float>(wg.spec(99u, 5u));         // not set by id: the fallback
  out[6] = static_cast<float>(wg.spec("SCALE", 0));      // a float read as int
  out[7] = static_cast<float>(wg.spec_constants.size());
}

// Runs spec_probe once (one workgroup of one) compiled with options; returns slot 0's eight floats.
std::vector<float> run(vgpu::CompileOptions options) {
  options.workgroup_size = {1, 1, 1};
  vgpu::Runtime runtime;
  vgpu::Device cpu = runtime.open("cpu:0");
  vgpu::KernelSource s;
  s.name = "test.cpu_spec";
  s.add_cpu(spec_probe, "1");
  s.bindings = {{0, vgpu::Access::write, "out", {}}};
  const vgpu::Kernel k = cpu.compile(s, options);
  vgpu::Buffer b = cpu.create_buffer(8 * 4);
  cpu.dispatch(k, cpu.bind(k, {{0, b}}), {}, vgpu::Groups{1});
  std::vector<float> out(8);
  cpu.read(b, out.data(), 32);
  return out;
}

}  // namespace

TEST_CASE("a CPU callable reads its compile's spec constants by id and by name", "[cpu][spec]") {
  vgpu::CompileOptions o;
  o.specialize(0u, 7u).specialize(7u, -3).specialize("SCALE", 2.5f).specialize("FLAG", true);
  CHECK(run(o) == std::vector<float>{7.0f, -3.0f, 2.5f, 1.0f, 42.0f, 5.0f, 2.0f, 4.0f});
}

TEST_CASE("a CPU callable compiled without spec constants reads every fallback", "[cpu][spec]") {
  CHECK(run({}) == std::vector<float>{111.0f, -1.0f, 0.0f, 0.0f, 42.0f, 5.0f, 0.0f, 0.0f});
}
