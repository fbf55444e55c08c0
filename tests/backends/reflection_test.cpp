// SPDX-License-Identifier: Apache-2.0
// tests/backends/reflection_test.cpp — core's use of a backend's reflection (KernelImpl::reflection()):
// a kernel without BindingDecls takes the shader's bindings and push-constant size; one with
// them is checked against it (a mismatch names the slot); dispatches check reflected fixed
// sizes; Kernel::workgroup_size() is the reflected local size. Runs on the reflect test
// backend (support/reflecting_device.hpp), since the GPU backends reflect on their own.
#include "support/catch.hpp"
#include <cstring>
#include <memory>
#include <vector>

#include "support/expect_error.hpp"
#include "support/reflecting_device.hpp"
#include "vgpu/vgpu.hpp"

namespace {

struct ScaleParams {
  std::uint32_t n;
  float scale;
};

// v[i] = v[i] * scale + table[i % 16]: slot 0 read and written, slot 1 a 16-float table.
vgpu::KernelSource scale_table(const char* name) {
  vgpu::KernelSource s;
  s.name = name;
  s.add_cpu(
      [](const vgpu::CpuWorkgroup& wg) {
        float* v = wg.buffer<float>(0);
        const float* table = wg.buffer<const float>(1);
        const auto& p = wg.params_as<ScaleParams>();
        wg.for_each_invocation([&](auto g, auto) {
          if (g[0] < p.n) v[g[0]] = v[g[0]] * p.scale + table[g[0] % 16];
        });
      },
      "1");
  return s;
}

// What a SPIR-V reflection of that shader says: an SSBO with a runtime float array at 0, a
// readonly block of 16 floats at 1, an 8-byte push-constant block, local size 16.
vgpu::KernelReflection scale_table_reflection() {
  vgpu::KernelReflection r;
  r.bindings = {{0, 0, vgpu::ResourceKind::storage_buffer, vgpu::Access::read_write, "Data", 0, 4},
                {0, 1, vgpu::ResourceKind::storage_buffer, vgpu::Access::read, "Table", 64, 0}};
  r.push_constant_bytes = sizeof(ScaleParams);
  r.local_size = {16, 1, 1};
  return r;
}

struct Fixture {
  std::shared_ptr<vgpu_test::ReflectionTable> table = std::make_shared<vgpu_test::ReflectionTable>();
  std::unique_ptr<vgpu::Runtime> runtime;
  vgpu::Device device;

  explicit Fixture(const std::vector<std::pair<std::string, vgpu::KernelReflection>>& reflections) {
    for (const auto& [name, r] : reflections) (*table)[name] = r;
    runtime = std::make_unique<vgpu::Runtime>(vgpu_test::reflect_runtime_options(table));
    device = runtime->open("reflect:0");
  }
};

}  // namespace

TEST_CASE("a reflected kernel without BindingDecls takes the shader's bindings and params size", "[reflection]") {
  Fixture f({{"test.derived", scale_table_reflection()}});
  const vgpu::Kernel k = f.device.compile(scale_table("test.derived"));
  REQUIRE(k.reflection() != nullptr);
  CHECK(k.reflection()->push_constant_bytes == 8);
  REQUIRE(k.bindings().size() == 2);
  CHECK(k.bindings()[0].slot == 0);
  CHECK(k.bindings()[0].access == vgpu::Access::read_write);
  CHECK(k.bindings()[1].slot == 1);
  CHECK(k.bindings()[1].access == vgpu::Access::read);
  CHECK(k.bindings()[1].name == "Table");
  CHECK(k.params_size() == 8);
  CHECK(k.workgroup_size() == std::array<std::uint32_t, 3>{16, 1, 1});

  const std::uint32_t n = 40;
  std::vector<float> v(n), table(16);
  for (std::uint32_t i = 0; i < n; ++i) v[i] = float(i);
  for (std::uint32_t i = 0; i < 16; ++i) table[i] = 100.0f * float(i);
  vgpu::Buffer bv = f.device.create_buffer(n * 4), bt = f.device.create_buffer(64), small = f.device.create_buffer(60);
  f.device.write(bv, v.data(), n * 4);
  f.device.write(bt, table.data(), 64);
  const vgpu::Groups groups{(n + k.workgroup_size()[0] - 1) / k.workgroup_size()[0]};
  const auto params = vgpu::ParamsBlock::of(ScaleParams{n, 2.0f});
  f.device.dispatch(k, f.device.bind(k, {{0, bv}, {1, bt}}), params, groups);
  std::vector<float> out(n);
  f.device.read(bv, out.data(), n * 4);
  for (std::uint32_t i = 0; i < n; ++i) CHECK(out[i] == 2.0f * float(i) + 100.0f * float(i % 16));

  // Every reflected slot must be bound, the table must hold its 64 fixed bytes, and the params
  // block is the push-constant block's size.
  REQUIRE_VGPU_ERROR(invalid_argument, "needs a buffer at slot 1 ('Table')", f.device.bind(k, {{0, bv}}));
  const vgpu::BindingSet undersized = f.device.bind(k, {{0, bv}, {1, small}});
  REQUIRE_VGPU_ERROR(invalid_argument, "slot 1 ('Table') holds 60 bytes but this dispatch needs 64",
                     f.device.dispatch(k, undersized, params, groups));
  REQUIRE_VGPU_ERROR(invalid_argument, "expects a 8-byte params block but got 0",
                     f.device.dispatch(k, f.device.bind(k, {{0, bv}, {1, bt}}), {}, groups));
}

TEST_CASE("declared bindings that disagree with the reflection are refused, naming the slot", "[reflection][errors]") {
  Fixture f({{"test.checked", scale_table_reflection()}});
  const auto declared = [](std::vector<vgpu::BindingDecl> b, std::uint32_t params = 8) {
    vgpu::KernelSource s = scale_table("test.checked");
    s.bindings = std::move(b);
    s.params_size = params;
    return s;
  };
  using vgpu::Access;
  // Right: accepted, and the declared sizes gain the reflected fixed size.
  const vgpu::Kernel ok = f.device.compile(declared({{0, Access::read_write, "v", {}}, {1, Access::read, "t", {}}}));
  REQUIRE(ok.bindings().size() == 2);
  REQUIRE(ok.bindings()[1].required_bytes);
  CHECK(ok.bindings()[1].required_bytes(vgpu::ParamsBlock{}, vgpu::Groups{1}) == 64);
  // A read_write buffer may be declared read (a shader that only reads need not say readonly).
  CHECK_NOTHROW(f.device.compile(declared({{0, Access::read, "v", {}}, {1, Access::read, "t", {}}})));

  REQUIRE_VGPU_ERROR(
      invalid_argument, "declares slot 2 ('extra') but its shader has no binding 2",
      f.device.compile(
          declared({{0, Access::read_write, "v", {}}, {1, Access::read, "t", {}}, {2, Access::write, "extra", {}}})));
  REQUIRE_VGPU_ERROR(invalid_argument, "uses slot 1 (its storage buffer 'Table' (set 0, binding 1))",
                     f.device.compile(declared({{0, Access::read_write, "v", {}}})));
  REQUIRE_VGPU_ERROR(invalid_argument, "declares slot 1 ('t') as write but the shader's storage buffer 'Table'",
                     f.device.compile(declared({{0, Access::read_write, "v", {}}, {1, Access::write, "t", {}}})));
  REQUIRE_VGPU_ERROR(invalid_argument, "declares a 4-byte params block but its push-constant block takes 8 bytes",
                     f.device.compile(declared({{0, Access::read_write, "v", {}}, {1, Access::read, "t", {}}}, 4)));
  // The reflected local size wins only when the options leave it unset.
  vgpu::CompileOptions wrong;
  wrong.workgroup_size = {64, 1, 1};
  REQUIRE_VGPU_ERROR(invalid_argument, "runs with local size 16x1x1 but CompileOptions::workgroup_size asks for 64x1x1",
                     f.device.compile(scale_table("test.checked"), wrong));
  vgpu::CompileOptions same;
  same.workgroup_size = {16, 1, 1};
  CHECK(f.device.compile(scale_table("test.checked"), same).workgroup_size() == std::array<std::uint32_t, 3>{16, 1, 1});
}

TEST_CASE("uniform blocks are read-only bindings, and an unreflected kernel keeps its declarations", "[reflection]") {
  vgpu::KernelReflection r = scale_table_reflection();
  r.bindings[1].kind = vgpu::ResourceKind::uniform_buffer;
  r.bindings[1].access = vgpu::Access::read_write;  // reflection reports no qualifier on a UBO
  Fixture f({{"test.ubo", r}});
  const vgpu::Kernel k = f.device.compile(scale_table("test.ubo"));
  REQUIRE(k.bindings().size() == 2);
  CHECK(k.bindings()[1].access == vgpu::Access::read);

  vgpu::KernelSource plain = scale_table("test.unreflected");
  plain.bindings = {{0, vgpu::Access::read_write, "v", {}}};
  plain.params_size = 8;
  vgpu::CompileOptions o;
  const vgpu::Kernel u = f.device.compile(plain, o);
  CHECK(u.reflection() == nullptr);
  CHECK(u.bindings().size() == 1);
  CHECK(u.workgroup_size() == vgpu::CompileOptions::kDefaultWorkgroupSize);
  o.workgroup_size = {8, 2, 1};
  CHECK(f.device.compile(plain, o).workgroup_size() == std::array<std::uint32_t, 3>{8, 2, 1});
}
