// SPDX-License-Identifier: Apache-2.0
// tests/runtime/runtime_test.cpp — the registry and runtime: backend order and statuses, device lists,
// open() identity, VGPU_BACKEND / VGPU_DEVICE handling, fingerprints, handle lifetimes, and the
// params ABI that keeps C structs, std430 blocks and push constants in agreement.
#include "support/catch.hpp"

#include <algorithm>
#include <cstddef>
#include <set>
#include <type_traits>

#include "vgpu/kernels/kernel_abi.hpp"
#include "support/expect_error.hpp"
#include "support/numerics.hpp"
#include "support/plan_runner.hpp"
#include "support/scoped_env.hpp"
#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/vgpu.hpp"

namespace vgpu_test {
namespace {

using vgpu::BackendKind;
using namespace vgpu::kernels;

// Params structs: 4-byte scalars, 16 bytes in all, members at 4-byte steps. That layout is the
// same in C, in std430 and in push-constant blocks; anything else (a vec3, a double, a bool)
// would silently disagree between host and shader.
template <class P>
constexpr bool abi_safe = sizeof(P) == 16 &&
                          alignof(P) == 4 && std::is_trivially_copyable_v<P>&& std::is_standard_layout_v<P>;
static_assert(abi_safe<MatmulParams> && abi_safe<ElementwiseParams> && abi_safe<ReduceParams> &&
              abi_safe<SoftmaxParams>);
static_assert(offsetof(MatmulParams, m) == 0 && offsetof(MatmulParams, n) == 4 && offsetof(MatmulParams, k) == 8 &&
              offsetof(MatmulParams, pad) == 12);
static_assert(offsetof(ElementwiseParams, n) == 0 && offsetof(ElementwiseParams, pad2) == 12);
static_assert(offsetof(ReduceParams, n) == 0 && offsetof(ReduceParams, pad2) == 12);
static_assert(offsetof(SoftmaxParams, rows) == 0 && offsetof(SoftmaxParams, cols) == 4 &&
              offsetof(SoftmaxParams, pad1) == 12);

std::size_t registry_rank(BackendKind k) {
  const BackendKind order[] = {BackendKind::cuda, BackendKind::vulkan, BackendKind::opengl, BackendKind::cpu};
  return static_cast<std::size_t>(std::find(std::begin(order), std::end(order), k) - std::begin(order));
}

}  // namespace

TEST_CASE("backends(): cuda, vulkan, opengl, cpu in that order and cpu is available", "[runtime]") {
  vgpu::Runtime rt(vgpu::RuntimeOptions{});
  const auto st = rt.backends();
  REQUIRE(st.size() == 4);
  CHECK(st[0].kind == BackendKind::cuda);
  CHECK(st[1].kind == BackendKind::vulkan);
  CHECK(st[2].kind == BackendKind::opengl);
  CHECK(st[3].kind == BackendKind::cpu);
  CHECK(st[3].compiled_in);
  CHECK(st[3].available);
  CHECK(st[3].reason.empty());
  for (const auto& s : st) {
    INFO(vgpu::to_string(s.kind) << ": " << s.reason);
    CHECK(s.available == s.reason.empty());  // unavailable always says why
    if (!s.compiled_in) {
      CHECK_FALSE(s.available);
      CHECK_THAT(s.reason, Catch::Matchers::ContainsSubstring("not compiled in"));
    }
  }
}

TEST_CASE("devices(): non-empty, unique ids, registry order with the CPU last", "[runtime]") {
  vgpu::Runtime rt(vgpu::RuntimeOptions{});
  const auto devices = rt.devices();
  REQUIRE(!devices.empty());
  std::set<std::string> ids;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    INFO(devices[i].id());
    CHECK(ids.insert(devices[i].id()).second);
    if (i > 0) CHECK(registry_rank(devices[i - 1].backend) <= registry_rank(devices[i].backend));
  }
  CHECK(devices.back().backend == BackendKind::cpu);
  CHECK(ids.count("cpu:0") == 1);
  CHECK(rt.default_device() == rt.open(devices.front()));
}

TEST_CASE("open(): one device per id, whichever way it is named", "[runtime]") {
  vgpu::Runtime rt(vgpu::RuntimeOptions{});
  vgpu::Device a = rt.open("cpu:0");
  CHECK(static_cast<bool>(a));
  CHECK(rt.open("cpu:0") == a);
  for (const auto& info : rt.devices())
    if (info.id() == "cpu:0") CHECK(rt.open(info) == a);
  CHECK(a.info().id() == "cpu:0");
  // "cpu" (no index) names the backend's first device: the same shared device, every time.
  CHECK(rt.open("cpu") == a);
  CHECK(rt.open("cpu") == a);
  CHECK(rt.open("cpu:0") == a);
  // Runtime::counters() sums the devices it opened.
  const auto before = rt.counters();
  a.create_buffer(16);
  CHECK((rt.counters() - before).allocations == 1);
  // Another runtime opens its own, independent device.
  vgpu::Runtime rt2(vgpu::RuntimeOptions{});
  CHECK(rt2.open("cpu:0") != a);
}

TEST_CASE("RuntimeOptions: allowed backends filter statuses and devices - and a forced device", "[runtime]") {
  vgpu::Runtime cpu_only(vgpu::RuntimeOptions{{BackendKind::cpu}, "", {}});
  for (const auto& d : cpu_only.devices()) CHECK(d.backend == BackendKind::cpu);
  for (const auto& s : cpu_only.backends())
    if (s.kind != BackendKind::cpu && s.compiled_in) CHECK(s.reason == "excluded by VGPU_BACKEND");

  vgpu::Runtime no_cpu(vgpu::RuntimeOptions{{BackendKind::vulkan, BackendKind::cuda}, "", {}});
  for (const auto& d : no_cpu.devices()) CHECK(d.backend != BackendKind::cpu);
  const auto cpu_status = no_cpu.backends().back();
  CHECK_FALSE(cpu_status.available);
  CHECK(cpu_status.reason == "excluded by VGPU_BACKEND");
  REQUIRE_VGPU_ERROR(unavailable, "excluded by VGPU_BACKEND", no_cpu.open("cpu:0"));
  if (no_cpu.devices().empty()) REQUIRE_VGPU_ERROR(unavailable, "no compute device", no_cpu.default_device());

  vgpu::Runtime forced(vgpu::RuntimeOptions{{}, "cpu:0", {}});
  CHECK(forced.default_device().info().id() == "cpu:0");
}

TEST_CASE("RuntimeOptions::from_env reads VGPU_BACKEND and VGPU_DEVICE", "[runtime]") {
  {
    ScopedEnv backend("VGPU_BACKEND", "vulkan,cpu"), device("VGPU_DEVICE", "cpu:0");
    const auto o = vgpu::RuntimeOptions::from_env();
    CHECK(o.allowed == std::vector<BackendKind>{BackendKind::vulkan, BackendKind::cpu});
    CHECK(o.forced_device == "cpu:0");
  }
  {
    ScopedEnv backend("VGPU_BACKEND", ",cpu,"), device("VGPU_DEVICE", std::nullopt);
    const auto o = vgpu::RuntimeOptions::from_env();
    CHECK(o.allowed == std::vector<BackendKind>{BackendKind::cpu});
    CHECK(o.forced_device.empty());
  }
  {
    ScopedEnv backend("VGPU_BACKEND", ""), device("VGPU_DEVICE", std::nullopt);
    CHECK(vgpu::RuntimeOptions::from_env().allowed.empty());
  }
}

TEST_CASE("fingerprints are stable across Runtime instances", "[runtime]") {
  vgpu::Runtime r1(vgpu::RuntimeOptions{}), r2(vgpu::RuntimeOptions{});
  const auto d1 = r1.devices(), d2 = r2.devices();
  REQUIRE(d1.size() == d2.size());
  for (std::size_t i = 0; i < d1.size(); ++i) {
    INFO(d1[i].id());
    CHECK(d1[i].id() == d2[i].id());
    CHECK(d1[i].fingerprint.text == d2[i].fingerprint.text);
    CHECK(d1[i].fingerprint.hash == d2[i].fingerprint.hash);
    CHECK(d1[i].fingerprint.hash == vgpu::cache::hash64(d1[i].fingerprint.text));
    CHECK(d1[i].fingerprint.hex().size() == 16);
    CHECK_THAT(d1[i].fingerprint.text,
               Catch::Matchers::EndsWith("vgpu_cache_format=" + std::to_string(vgpu::kCacheFormatVersion)));
  }
  vgpu::Device a = r1.open("cpu:0"), b = r2.open("cpu:0");
  CHECK(a != b);
  CHECK(a.info().fingerprint.hash == b.info().fingerprint.hash);
  // Same source, same device kind and fingerprint: the same cache key in both processes' worth.
  const auto plan = vgpu::ops::matmul(a.info(), 8, 8, 8);
  CHECK(a.compile(plan.source, plan.options).key_hex() == b.compile(plan.source, plan.options).key_hex());
}

TEST_CASE("a device, its buffers and kernels outlive the runtime that opened them", "[runtime]") {
  vgpu::Device device;
  {
    vgpu::Runtime rt(vgpu::RuntimeOptions{});
    device = rt.open("cpu:0");
  }
  const auto a = random_floats(40, 1), b = random_floats(40, 2);
  HostTensors args{a, b, std::vector<float>(40, kNaN)};
  run_plan(device, vgpu::ops::mul(device.info(), 40), args, Path::raw);
  for (int i = 0; i < 40; ++i) CHECK(args[2][i] == a[i] * b[i]);
}

TEST_CASE("params ABI: ParamsBlock carries the kernel_abi structs byte for byte", "[runtime][abi]") {
  const auto block = vgpu::ParamsBlock::of(MatmulParams{3, 5, 7, 0});
  CHECK(block.size() == 16);
  CHECK(reinterpret_cast<std::uintptr_t>(block.data()) % 16 == 0);
  const auto back = block.as<MatmulParams>();
  CHECK((back.m == 3 && back.n == 5 && back.k == 7));
  const std::uint32_t* words = static_cast<const std::uint32_t*>(block.data());
  CHECK((words[0] == 3 && words[1] == 5 && words[2] == 7 && words[3] == 0));

  vgpu::Device device = vgpu::Runtime::global().open("cpu:0");
  const auto& info = device.info();
  const auto mm = vgpu::ops::matmul(info, 3, 7, 5);  // M, K, N
  CHECK(mm.source.params_size == sizeof(MatmulParams));
  const auto q = mm.steps.at(0).params.as<MatmulParams>();
  CHECK((q.m == 3 && q.n == 5 && q.k == 7));
  CHECK(mm.tensors.at(0).shape == vgpu::Shape{3, 7});
  CHECK(mm.tensors.at(1).shape == vgpu::Shape{7, 5});
  CHECK(mm.tensors.at(2).shape == vgpu::Shape{3, 5});
  const auto sm = vgpu::ops::softmax_rows(info, 4, 9);
  CHECK(sm.source.params_size == sizeof(SoftmaxParams));
  CHECK((sm.steps.at(0).params.as<SoftmaxParams>().rows == 4 && sm.steps.at(0).params.as<SoftmaxParams>().cols == 9));
  for (const auto& p : {vgpu::ops::add(info, 77), vgpu::ops::mul(info, 77), vgpu::ops::axpy(info, 77)}) {
    CHECK(p.source.params_size == sizeof(ElementwiseParams));
    CHECK(p.steps.at(0).params.as<ElementwiseParams>().n == 77);
  }
  const auto rs = vgpu::ops::reduce_sum(info, 100000);
  CHECK(rs.source.params_size == sizeof(ReduceParams));
  CHECK(rs.steps.front().params.as<ReduceParams>().n == 100000);
  for (const auto& step : rs.steps) CHECK(step.params.size() == sizeof(ReduceParams));
}

TEST_CASE("small value types: names, shapes, counters", "[runtime]") {
  for (BackendKind k : {BackendKind::cuda, BackendKind::vulkan, BackendKind::opengl, BackendKind::cpu})
    CHECK(vgpu::parse_backend_kind(vgpu::to_string(k)) == k);
  CHECK(vgpu::to_string(vgpu::Shape{2, 3, 4}) == "[2x3x4]");
  CHECK(vgpu::element_count(vgpu::Shape{2, 3, 4}) == 24);
  CHECK(vgpu::element_count(vgpu::Shape{}) == 1);
  CHECK(vgpu::dtype_size(vgpu::DType::f32) == 4);
  CHECK(vgpu::Groups{2, 3, 5}.total() == 30);
  CHECK(vgpu::ops::names() ==
        std::vector<std::string>{"matmul", "axpy", "add", "mul", "reduce_sum", "softmax_rows", "matmul_tf32"});
  vgpu::CounterSnapshot a, b;
  a.compiles = 5, a.dispatches = 9, b.compiles = 2, b.dispatches = 4;
  const auto d = a - b;
  CHECK((d.compiles == 3 && d.dispatches == 5));
  CHECK((a + b).compiles == 7);
  CHECK_THAT(d.to_string(), Catch::Matchers::StartsWith("compiles=3 l1_hits=0"));
  CHECK(vgpu::to_string(vgpu::ErrorCategory::invalid_argument) == "invalid_argument");
  const vgpu::Error e(vgpu::ErrorCategory::io, "disk full.", "free space.");
  CHECK(std::string(e.what()) == "disk full. Fix: free space.");
}

}  // namespace vgpu_test
