// SPDX-License-Identifier: Apache-2.0
// tests/runtime/sizes_test.cpp — sizes past 64 bits (issue 29 item 7): a shape whose element count or
// byte size does not fit, offsets near 2^64, a dispatch whose workgroups times local size do
// not fit, a built-in op's binding sizes that would wrap, and a queue's limits at the top of
// their ranges. Each is refused with invalid_argument naming what overflowed, before any buffer
// is made or any kernel runs: a wrapped size would make a small buffer that a kernel then
// writes past.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "support/catch.hpp"
#include "support/expect_error.hpp"
#include "support/forwarding_device.hpp"
#include "support/kernel_sources.hpp"
#include "support/cpu_variant_backend.hpp"
#include "support/test_backend.hpp"
#include "vgpu/vgpu.hpp"

namespace vgpu_test {
namespace {

using namespace std::chrono_literals;

constexpr std::uint64_t k62 = std::uint64_t{1} << 62;

vgpu::RuntimeOptions cpu_only() {
  vgpu::RuntimeOptions o;
  o.allowed = {vgpu::BackendKind::cpu};
  o.cache_enabled = false;
  o.background = false;
  return o;
}

/// A plan of one CPU kernel (a no-op callable) over one read_write tensor of shape.
vgpu::KernelPlan one_tensor_plan(const vgpu::Shape& shape) {
  vgpu::KernelPlan plan;
  plan.source.name = "test.one_tensor";
  set_cpu(
      plan.source, [](const vgpu::CpuWorkgroup&) {}, "1");
  plan.source.bindings = {vgpu::BindingDecl{0, vgpu::Access::read_write, "x", nullptr}};
  plan.tensors = {{"x", vgpu::DType::f32, shape, vgpu::Access::read_write, false}};
  plan.steps.push_back(vgpu::PlanStep{});
  plan.steps.back().slot_tensor = {{0, 0}};
  return plan;
}

/// A CPU kernel with no bindings whose workgroups do nothing, at local size 1024.
vgpu::Kernel empty_kernel(vgpu::Device& device) {
  vgpu::KernelSource s;
  s.name = "test.empty";
  set_cpu(
      s, [](const vgpu::CpuWorkgroup&) {}, "1");
  vgpu::CompileOptions o;
  o.workgroup_size = {1024, 1, 1};
  return device.compile(s, o);
}

// A backend whose one device is the CPU device claiming 2^32 - 1 workgroups along every axis.
std::shared_ptr<vgpu::ComputeBackend> wide_backend() {
  return std::make_shared<CpuVariantBackend>([](vgpu::DeviceInfo& d) {
    d.name = "wide test device";
    d.limits.max_workgroup_count = {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu};
    d.fingerprint = vgpu::make_fingerprint({{"sizes_wide", "1"}});
  });
}

}  // namespace

TEST_CASE("sizes: a shape whose element count passes 64 bits is refused with the shape named", "[sizes]") {
  const auto refused = catch_error([] { (void)vgpu::element_count({std::uint64_t{1} << 32, std::uint64_t{1} << 32}); });
  REQUIRE(refused.has_value());
  check_error(*refused, vgpu::ErrorCategory::invalid_argument, "[4294967296x4294967296]");
  // A zero dimension makes any shape empty, however large the others.
  CHECK(vgpu::element_count({std::uint64_t{1} << 40, std::uint64_t{1} << 40, 0}) == 0);
  const auto wrapped = catch_error([] { (void)vgpu::element_count({k62, 4}); });  // 2^64 would read as 0
  REQUIRE(wrapped.has_value());
  check_error(*wrapped, vgpu::ErrorCategory::invalid_argument, "[4611686018427387904x4]");
}

TEST_CASE("sizes: a tensor of 2^62+1 float32 elements is refused before any buffer is made", "[sizes]") {
  vgpu::Runtime runtime(cpu_only());
  vgpu::Device device = runtime.open("cpu:0");
  // 4·(2^62+1) bytes wrapped to a 4-byte buffer (a CPU kernel then wrote past it); 4·2^62 to
  // a "zero-byte buffer".
  for (const std::uint64_t n : {k62 + 1, k62, (k62 - 1) * 2 + 3}) {
    INFO("elements " << n);
    const auto refused = catch_error([&] { vgpu::PersistentKernel k(device, one_tensor_plan({n})); });
    REQUIRE(refused.has_value());
    check_error(*refused, vgpu::ErrorCategory::invalid_argument, "[" + std::to_string(n) + "]");
    CHECK_THAT(std::string(refused->what()), Catch::Matchers::ContainsSubstring("tensor 'x'"));
    CHECK_THAT(std::string(refused->what()), Catch::Matchers::ContainsSubstring("64 bits"));
  }
  // Two dimensions whose product fits but whose bytes do not.
  const auto two = catch_error([&] {
    vgpu::PersistentKernel k(device, one_tensor_plan({std::uint64_t{1} << 31, std::uint64_t{1} << 31}));
  });
  REQUIRE(two.has_value());
  check_error(*two, vgpu::ErrorCategory::invalid_argument, "[2147483648x2147483648]");
  CHECK(device.counters().allocations == 0);
}

TEST_CASE("sizes: tensor_bytes and the checked helpers refuse what passes 64 bits", "[sizes]") {
  CHECK(vgpu::tensor_bytes({std::uint64_t{1} << 61}, vgpu::DType::f32) == std::uint64_t{1} << 63);
  CHECK(vgpu::tensor_bytes({3, 5}, vgpu::DType::i32) == 60);
  const auto bytes = catch_error([] { (void)vgpu::tensor_bytes({k62}, vgpu::DType::f32); });
  REQUIRE(bytes.has_value());
  check_error(*bytes, vgpu::ErrorCategory::invalid_argument, "[4611686018427387904]");
  CHECK(vgpu::checked_mul(std::uint64_t{1} << 32, (std::uint64_t{1} << 32) - 1, "a product") ==
        (std::uint64_t{1} << 32) * ((std::uint64_t{1} << 32) - 1));
  CHECK(vgpu::checked_add(UINT64_MAX - 1, 1, "a sum") == UINT64_MAX);
  const auto mul =
      catch_error([] { (void)vgpu::checked_mul(std::uint64_t{1} << 32, std::uint64_t{1} << 32, "the product"); });
  REQUIRE(mul.has_value());
  check_error(*mul, vgpu::ErrorCategory::invalid_argument, "the product");
  const auto add = catch_error([] { (void)vgpu::checked_add(UINT64_MAX, 1, "the sum"); });
  REQUIRE(add.has_value());
  check_error(*add, vgpu::ErrorCategory::invalid_argument, "the sum");
}

TEST_CASE("sizes: writes and reads and copies at offsets near 2^64 are refused", "[sizes]") {
  vgpu::Runtime runtime(cpu_only());
  vgpu::Device device = runtime.open("cpu:0");
  vgpu::Buffer a = device.create_buffer(64), b = device.create_buffer(64);
  std::vector<std::byte> host(64);
  const std::uint64_t near = UINT64_MAX - 7;  // offset + 16 wraps to 8, inside the buffer
  auto refused = [](auto&& f) {
    const auto e = catch_error(f);
    REQUIRE(e.has_value());
    check_error(*e, vgpu::ErrorCategory::invalid_argument, "runs past the end");
  };
  refused([&] { device.write(a, host.data(), 16, near); });
  refused([&] { device.read(a, host.data(), 16, near); });
  refused([&] { device.copy(a, b, 16, near, 0); });
  refused([&] { device.copy(a, b, 16, 0, near); });
  refused([&] { device.write(a, host.data(), UINT64_MAX, 1); });
  vgpu::Batch batch = device.create_batch();
  refused([&] {
    const vgpu::HostWrite w[] = {{a, host.data(), 16, near}};
    device.round_trip(w, batch, {});
  });
  refused([&] {
    const vgpu::HostRead r[] = {{a, host.data(), 16, near}};
    device.round_trip({}, batch, r);
  });
}

TEST_CASE("sizes: a dispatch whose workgroups times local size pass 64 bits is refused", "[sizes]") {
  // cpu:0 allows 2^31-1 x 65535 x 65535 groups (2^63 in all): times a local size of 1024 that
  // is 2^73 invocations. Without the check it would run until the time limit.
  {
    vgpu::Runtime runtime(cpu_only());
    vgpu::Device device = runtime.open("cpu:0");
    device.set_timeout(5s);
    const vgpu::Kernel k = empty_kernel(device);
    const vgpu::BindingSet none = device.bind(k, std::span<const vgpu::Binding>{});
    const auto refused = catch_error([&] {
      device.dispatch(k, none, vgpu::ParamsBlock{}, {2147483647u, 65535u, 65535u});
    });
    REQUIRE(refused.has_value());
    check_error(*refused, vgpu::ErrorCategory::invalid_argument, "2147483647x65535x65535");
    CHECK_THAT(std::string(refused->what()), Catch::Matchers::ContainsSubstring("64 bits"));
  }
  // A device allowing 2^32-1 groups along every axis: the group count alone (2^96) wraps.
  {
    vgpu::RuntimeOptions o = cpu_only();
    o.allowed.clear();
    o.backends.push_back(wide_backend());
    vgpu::Runtime runtime(o);
    vgpu::Device device = runtime.open("test:0");
    device.set_timeout(5s);
    const vgpu::Kernel k = empty_kernel(device);
    const vgpu::BindingSet none = device.bind(k, std::span<const vgpu::Binding>{});
    vgpu::Batch batch = device.create_batch();
    const auto refused = catch_error([&] {
      batch.dispatch(k, none, vgpu::ParamsBlock{}, {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu});
    });
    REQUIRE(refused.has_value());
    check_error(*refused, vgpu::ErrorCategory::invalid_argument, "4294967295x4294967295x4294967295");
    // A large grid that fits still runs (its groups do nothing).
    device.dispatch(k, none, vgpu::ParamsBlock{}, {4096, 2, 1});
  }
}

TEST_CASE("sizes: a built-in op whose binding sizes pass 64 bits refuses the dispatch", "[sizes]") {
  // softmax_rows over 2^31 x 2^31 floats: its bindings need 2^64 bytes, which wrapped to 0, so
  // 4-byte buffers passed the check and the CPU kernel wrote past them.
  vgpu::Runtime runtime(cpu_only());
  vgpu::Device device = runtime.open("cpu:0");
  device.set_timeout(5s);
  const vgpu::KernelPlan plan = vgpu::ops::softmax_rows(device.info(), 0x80000000u, 0x80000000u);
  const vgpu::Kernel k = device.compile(plan.source, plan.options);
  vgpu::Buffer x = device.create_buffer(4), out = device.create_buffer(4);
  const vgpu::Binding bindings[] = {{0, x}, {1, out}};
  const vgpu::BindingSet set = device.bind(k, bindings);
  const vgpu::PlanStep& step = plan.steps.at(0);
  const auto refused = catch_error([&] { device.dispatch(k, set, step.params, step.groups); });
  REQUIRE(refused.has_value());
  check_error(*refused, vgpu::ErrorCategory::invalid_argument, "softmax_rows");
  CHECK_THAT(std::string(refused->what()), Catch::Matchers::ContainsSubstring("64 bits"));
  // As a PersistentKernel the tensors' sizes are refused first.
  const auto pk = catch_error([&] { vgpu::PersistentKernel p(device, plan); });
  REQUIRE(pk.has_value());
  check_error(*pk, vgpu::ErrorCategory::invalid_argument, "[2147483648x2147483648]");
}

TEST_CASE("sizes: a queue's item counts at the top of their range are refused", "[sizes]") {
  for (const std::uint64_t n : {std::uint64_t{0}, vgpu::PersistentQueue::kMaxItems + 1, UINT64_MAX}) {
    INFO("max_items " << n);
    const auto refused = catch_error([&] { vgpu::PersistentQueue q(n); });
    REQUIRE(refused.has_value());
    check_error(*refused, vgpu::ErrorCategory::invalid_argument, "items was asked for");
  }
  // The most items per launch and output bytes a config can say run a small queue as any other.
  vgpu::Runtime runtime(cpu_only());
  vgpu::Device device = runtime.open("cpu:0");
  vgpu::PersistentQueue q;
  for (std::uint32_t i = 0; i < 5; ++i) {
    const std::uint32_t word = 10 * i;
    q.push(i, std::as_bytes(std::span<const std::uint32_t>(&word, 1)));
  }
  vgpu::QueueConfig config;
  config.max_items_per_launch = UINT32_MAX;
  vgpu::QueuePipeline pipeline(device, vgpu::queue_add_one_kernel(), config);
  const vgpu::QueueReport report = pipeline.run(q);
  REQUIRE(report.results.size() == 5);
  for (std::uint32_t i = 0; i < 5; ++i) CHECK(report.results[i].as<std::uint32_t>() == 10 * i + 1);
}

}  // namespace vgpu_test
