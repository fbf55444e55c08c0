// SPDX-License-Identifier: Apache-2.0
// tests/runtime/errors_test.cpp — every bad input throws vgpu::Error with the documented category and a
// message ending in an actionable "Fix: " hint, and the device keeps working afterwards.
#include <array>
#include <cstddef>

#include "support/catch.hpp"
#include "support/expect_error.hpp"
#include "support/kernel_sources.hpp"
#include "support/numerics.hpp"
#include "support/plan_runner.hpp"
#include "support/scoped_env.hpp"
#include "vgpu/inventory.hpp"
#include "vgpu/kernels/kernel_abi.hpp"
#include "vgpu/vgpu.hpp"

namespace vgpu_test {
namespace {

vgpu::Device cpu() { return vgpu::Runtime::global().open("cpu:0"); }

// A correct op after a failure: the device (and its L1 cache) must be unharmed.
void require_usable(vgpu::Device device) {
  const auto a = random_floats(33, 1), b = random_floats(33, 2);
  HostTensors args{a, b, std::vector<float>(33, kNaN)};
  run_plan(device, vgpu::ops::add(device.info(), 33), args, Path::persistent);
  for (int i = 0; i < 33; ++i) REQUIRE(args[2][i] == a[i] + b[i]);
}

// A compiled matmul kernel with 4×4 buffers bound, for the raw-API error cases.
struct SmallMatmul {
  vgpu::Device device = cpu();
  vgpu::KernelPlan plan = vgpu::ops::matmul(device.info(), 4, 4, 4);
  vgpu::Kernel kernel = device.compile(plan.source, plan.options);
  vgpu::Buffer a = device.create_buffer(64), b = device.create_buffer(64), c = device.create_buffer(64);
  vgpu::BindingSet set = device.bind(kernel, {{0, a}, {1, b}, {2, c}});
  vgpu::ParamsBlock params = plan.steps.at(0).params;
  vgpu::Groups groups = plan.steps.at(0).groups;
};

}  // namespace

TEST_CASE("errors: Cache::matmul shape mismatches and empty matrices", "[errors]") {
  vgpu::Cache cache(cpu());
  const vgpu::Matrix a(3, 4, 1.0f), b(5, 2, 1.0f), empty(0, 0);
  REQUIRE_VGPU_ERROR(invalid_argument, "A's columns must equal B's rows", cache.matmul(a, b));
  REQUIRE_VGPU_ERROR(invalid_argument, "empty", cache.matmul(empty, b));
  REQUIRE_VGPU_ERROR(invalid_argument, "empty", cache.matmul(a, vgpu::Matrix(4, 0)));
  vgpu::Matrix torn(2, 2);
  torn.data.resize(3);  // rows*cols disagrees with the data
  REQUIRE_VGPU_ERROR(invalid_argument, "holds 3 values", cache.matmul(torn, vgpu::Matrix(2, 2)));
  std::vector<float> buf(16);
  REQUIRE_VGPU_ERROR(invalid_argument, "M is 0", cache.matmul(buf.data(), buf.data(), buf.data(), 0, 4, 4));
  CHECK(cache.matmul(vgpu::Matrix(2, 3, 1.0f), vgpu::Matrix(3, 2, 2.0f)).data == std::vector<float>(4, 6.0f));
  require_usable(cache.device());
}

TEST_CASE("errors: PersistentKernel calls with wrong count, dtype, shape, null or const output", "[errors]") {
  vgpu::Device device = cpu();
  vgpu::PersistentKernel add(device, vgpu::ops::add(device.info(), 8));
  std::vector<float> a(8, 1.0f), b(8, 2.0f), out(8), small(4);
  std::vector<std::int32_t> ints(8);
  const float* null_in = nullptr;
  REQUIRE_VGPU_ERROR(invalid_argument, "takes 3 tensors (a, b, out) but got 2",
                     add({vgpu::TensorArg(a.data(), {8}), vgpu::TensorArg(b.data(), {8})}));
  REQUIRE_VGPU_ERROR(
      invalid_argument, "dtype i32",
      add({vgpu::TensorArg(ints.data(), {8}), vgpu::TensorArg(b.data(), {8}), vgpu::TensorArg(out.data(), {8})}));
  REQUIRE_VGPU_ERROR(
      invalid_argument, "shape [4]",
      add({vgpu::TensorArg(small.data(), {4}), vgpu::TensorArg(b.data(), {8}), vgpu::TensorArg(out.data(), {8})}));
  REQUIRE_VGPU_ERROR(
      invalid_argument, "shape [2x4]",
      add({vgpu::TensorArg(a.data(), {2, 4}), vgpu::TensorArg(b.data(), {8}), vgpu::TensorArg(out.data(), {8})}));
  REQUIRE_VGPU_ERROR(
      invalid_argument, "null",
      add({vgpu::TensorArg(null_in, {8}), vgpu::TensorArg(b.data(), {8}), vgpu::TensorArg(out.data(), {8})}));
  const float* const_out = out.data();
  REQUIRE_VGPU_ERROR(
      invalid_argument, "read-only",
      add({vgpu::TensorArg(a.data(), {8}), vgpu::TensorArg(b.data(), {8}), vgpu::TensorArg(const_out, {8})}));
  CHECK(add.calls() == 0);  // nothing ran
  add({vgpu::TensorArg(a.data(), {8}), vgpu::TensorArg(b.data(), {8}), vgpu::TensorArg(out.data(), {8})});
  CHECK(out == std::vector<float>(8, 3.0f));
  require_usable(device);
}

TEST_CASE("errors: zero sizes", "[errors]") {
  vgpu::Device device = cpu();
  REQUIRE_VGPU_ERROR(invalid_argument, "zero-byte buffer", device.create_buffer(0));
  if (const auto max = device.info().limits.max_buffer_bytes; max != 0)
    REQUIRE_VGPU_ERROR(out_of_memory, "exceeds", device.create_buffer(max + 1));
  REQUIRE_VGPU_ERROR(invalid_argument, "M is 0", vgpu::ops::matmul(device.info(), 0, 4, 4));
  REQUIRE_VGPU_ERROR(invalid_argument, "N is 0", vgpu::ops::matmul(device.info(), 4, 4, 0));
  REQUIRE_VGPU_ERROR(invalid_argument, "n is 0", vgpu::ops::reduce_sum(device.info(), 0));
  REQUIRE_VGPU_ERROR(invalid_argument, "cols is 0", vgpu::ops::softmax_rows(device.info(), 3, 0));
  REQUIRE_VGPU_ERROR(invalid_argument, "32-bit", vgpu::ops::add(device.info(), 1ull << 33));
  vgpu::KernelPlan empty_plan = vgpu::ops::add(device.info(), 4);
  empty_plan.tensors[0].shape = {0};
  REQUIRE_VGPU_ERROR(invalid_argument, "no elements", vgpu::PersistentKernel(device, empty_plan));
  require_usable(device);
}

TEST_CASE("errors: binding slots missing, unknown or twice - and buffers empty or from another device", "[errors]") {
  SmallMatmul k;
  REQUIRE_VGPU_ERROR(invalid_argument, "needs a buffer at slot 2", k.device.bind(k.kernel, {{0, k.a}, {1, k.b}}));
  REQUIRE_VGPU_ERROR(invalid_argument, "no binding slot 3",
                     k.device.bind(k.kernel, {{0, k.a}, {1, k.b}, {2, k.c}, {3, k.c}}));
  REQUIRE_VGPU_ERROR(invalid_argument, "bound twice", k.device.bind(k.kernel, {{0, k.a}, {0, k.b}, {2, k.c}}));
  REQUIRE_VGPU_ERROR(invalid_argument, "empty Buffer",
                     k.device.bind(k.kernel, {{0, vgpu::Buffer{}}, {1, k.b}, {2, k.c}}));

  // An independent runtime opens its own DeviceCore for cpu:0: its handles do not mix with ours.
  vgpu::Runtime rt2(vgpu::RuntimeOptions{});
  vgpu::Device other = rt2.open("cpu:0");
  REQUIRE(other != k.device);
  vgpu::Buffer foreign = other.create_buffer(64);
  REQUIRE_VGPU_ERROR(invalid_argument, "another device", k.device.bind(k.kernel, {{0, foreign}, {1, k.b}, {2, k.c}}));
  float x[16] = {};
  REQUIRE_VGPU_ERROR(invalid_argument, "another device", k.device.write(foreign, x, sizeof x));
  REQUIRE_VGPU_ERROR(invalid_argument, "another device", k.device.copy(k.a, foreign, 16));
  REQUIRE_VGPU_ERROR(invalid_argument, "another device", other.dispatch(k.kernel, k.set, k.params, k.groups));
  vgpu::Batch batch = other.create_batch();
  REQUIRE_VGPU_ERROR(invalid_argument, "another device", batch.dispatch(k.kernel, k.set, k.params, k.groups));
  REQUIRE_VGPU_ERROR(invalid_argument, "another device", k.device.submit(batch));
  REQUIRE_VGPU_ERROR(invalid_argument, "empty Device", vgpu::Device{}.create_buffer(4));
  require_usable(k.device);
  require_usable(other);
}

TEST_CASE("errors: params blocks too large, null or of the wrong size", "[errors]") {
  std::array<std::byte, 129> big{};
  REQUIRE_VGPU_ERROR(invalid_argument, "129 bytes", vgpu::ParamsBlock(big.data(), 129));
  REQUIRE_VGPU_ERROR(invalid_argument, "null", vgpu::ParamsBlock(nullptr, 16));
  CHECK(vgpu::ParamsBlock(big.data(), 128).size() == 128);  // the limit itself is fine
  SmallMatmul k;
  const vgpu::kernels::ReduceParams p8{1, 0, 0, 0};
  REQUIRE_VGPU_ERROR(invalid_argument, "expects a 16-byte params block but got 8",
                     k.device.dispatch(k.kernel, k.set, vgpu::ParamsBlock(&p8, 8), k.groups));
  vgpu::KernelSource huge = k.plan.source;
  huge.params_size = 132;
  REQUIRE_VGPU_ERROR(invalid_argument, "132-byte params block", k.device.compile(huge, k.plan.options));
  require_usable(k.device);
}

TEST_CASE("errors: buffers too small for the dispatch, zero or too many groups", "[errors]") {
  SmallMatmul k;
  k.device.dispatch(k.kernel, k.set, k.params, k.groups);  // the 4×4 product fits
  const auto big = vgpu::ParamsBlock::of(vgpu::kernels::MatmulParams{64, 64, 64, 0});
  REQUIRE_VGPU_ERROR(invalid_argument, "holds 64 bytes but this dispatch needs 16384 bytes",
                     k.device.dispatch(k.kernel, k.set, big, k.groups));
  vgpu::Batch batch = k.device.create_batch();
  REQUIRE_VGPU_ERROR(invalid_argument, "needs 16384 bytes", batch.dispatch(k.kernel, k.set, big, k.groups));
  CHECK(batch.size() == 0);
  REQUIRE_VGPU_ERROR(invalid_argument, "zero workgroups along x",
                     k.device.dispatch(k.kernel, k.set, k.params, {0, 1, 1}));
  REQUIRE_VGPU_ERROR(invalid_argument, "zero workgroups along z",
                     k.device.dispatch(k.kernel, k.set, k.params, {1, 1, 0}));
  const auto max_y = k.device.info().limits.max_workgroup_count[1];
  if (max_y < 0xffffffffu)
    REQUIRE_VGPU_ERROR(invalid_argument, "workgroups along y",
                       k.device.dispatch(k.kernel, k.set, k.params, {1, max_y + 1, 1}));
  vgpu::CompileOptions zero_wg = k.plan.options;
  zero_wg.workgroup_size = {0, 1, 1};
  REQUIRE_VGPU_ERROR(invalid_argument, "workgroup size 0", k.device.compile(k.plan.source, zero_wg));
  require_usable(k.device);
}

TEST_CASE("errors: null data and out-of-range transfers", "[errors]") {
  vgpu::Device device = cpu();
  vgpu::Buffer buf = device.create_buffer(16);
  float host[8] = {};
  REQUIRE_VGPU_ERROR(invalid_argument, "null pointer", device.write(buf, nullptr, 16));
  REQUIRE_VGPU_ERROR(invalid_argument, "null pointer", device.read(buf, nullptr, 16));
  REQUIRE_VGPU_ERROR(invalid_argument, "runs past the end of a 16-byte buffer", device.write(buf, host, 32));
  REQUIRE_VGPU_ERROR(invalid_argument, "runs past the end", device.read(buf, host, 8, 12));
  REQUIRE_VGPU_ERROR(invalid_argument, "runs past the end", device.write(buf, host, 4, ~0ull));
  REQUIRE_VGPU_ERROR(invalid_argument, "overlap", device.copy(buf, buf, 8, 0, 4));
  REQUIRE_VGPU_ERROR(invalid_argument, "empty Buffer", device.write(vgpu::Buffer{}, host, 4));
  const float one[4] = {1, 2, 3, 4};
  device.write(buf, one, 16);
  device.copy(buf, buf, 8, 0, 8);  // disjoint ranges of one buffer are fine
  device.read(buf, host, 16);
  CHECK((host[0] == 1 && host[1] == 2 && host[2] == 1 && host[3] == 2));

  // Device::round_trip checks every copy before anything runs: a bad read fails the call
  // before its writes change the buffer.
  const float nines[4] = {9, 9, 9, 9};
  vgpu::Batch nothing = device.create_batch();
  const vgpu::HostWrite w[] = {{buf, nines, 16, 0}};
  const vgpu::HostRead bad_null[] = {{buf, nullptr, 16, 0}};
  const vgpu::HostRead bad_range[] = {{buf, host, 8, 12}};
  REQUIRE_VGPU_ERROR(invalid_argument, "null pointer", device.round_trip(w, nothing, bad_null));
  REQUIRE_VGPU_ERROR(invalid_argument, "runs past the end", device.round_trip(w, nothing, bad_range));
  const vgpu::HostWrite bad_write[] = {{buf, nullptr, 16, 0}};
  REQUIRE_VGPU_ERROR(invalid_argument, "null pointer", device.round_trip(bad_write, nothing, {}));
  device.read(buf, host, 16);
  CHECK((host[0] == 1 && host[1] == 2 && host[2] == 1 && host[3] == 2));
  const vgpu::HostRead r[] = {{buf, host, 16, 0}};
  device.round_trip(w, nothing, r);
  CHECK((host[0] == 9 && host[3] == 9));
  require_usable(device);
}

TEST_CASE("errors: unknown ops, kernels, shapes and missing dialects", "[errors]") {
  vgpu::Device device = cpu();
  REQUIRE_VGPU_ERROR(invalid_argument, "unknown op 'conv2d'", vgpu::ops::plan("conv2d", device.info(), {3}));
  REQUIRE_VGPU_ERROR(invalid_argument, "matmul, axpy", vgpu::ops::plan("conv2d", device.info(), {3}));
  REQUIRE_VGPU_ERROR(invalid_argument, "{M, K, N}", vgpu::ops::plan("matmul", device.info(), {4, 4}));
  vgpu::KernelDatabase db(device);
  REQUIRE_VGPU_ERROR(invalid_argument, "no kernel 'nope'", db.get("nope", {1}));
  REQUIRE_VGPU_ERROR(invalid_argument, "{n}", db.get("add", {2, 2}));
  REQUIRE_VGPU_ERROR(invalid_argument, "non-empty id", db.add("", nullptr));
  vgpu::KernelSource glsl_only;
  glsl_only.name = "test.glsl_only";
  set_glsl(glsl_only, "void main() {}");
  REQUIRE_VGPU_ERROR(not_supported, "no cpu source", device.compile(glsl_only));
  vgpu::KernelSource nameless = vgpu::ops::add(device.info(), 4).source;
  nameless.name.clear();
  REQUIRE_VGPU_ERROR(invalid_argument, "no name", device.compile(nameless));
  CHECK(db.size() == 0);
  require_usable(device);
}

TEST_CASE("errors: text that is not UTF-8 is vgpu's invalid_argument or comes out replaced, never nlohmann's error",
          "[errors]") {
  // An op name of a user's factory goes into the selection cache's JSON, which holds only UTF-8:
  // refused up front, before any calibration (nlohmann used to throw type_error 316 mid-way).
  const vgpu::PlanFactory axpy = [](const vgpu::DeviceInfo& d, const vgpu::Shape& shape) {
    return vgpu::ops::axpy(d, shape.at(0));
  };
  const std::string op = "my_axpy_\xff";
  REQUIRE_VGPU_ERROR(invalid_argument, "is not UTF-8", vgpu::Runtime::global().explain(op, {4096}, axpy));
  REQUIRE_VGPU_ERROR(invalid_argument, "is not UTF-8", vgpu::Runtime::global().select(op, {4096}, axpy));
  // A device name as a driver might report it (Latin-1): the inventory's JSON says U+FFFD there.
  vgpu::DeviceInfo info = cpu().info();
  info.name = "caf\xe9";
  std::string text;
  REQUIRE_NOTHROW(text = vgpu::inventory_json(info));
  CHECK_THAT(text, Catch::Matchers::ContainsSubstring("caf\xef\xbf\xbd"));
  REQUIRE_NOTHROW(text = vgpu::inventory_json({}, {info}, 2));
  CHECK_THAT(text, Catch::Matchers::ContainsSubstring("caf\xef\xbf\xbd"));
}

TEST_CASE("errors: bad VGPU_BACKEND, unknown device ids", "[errors]") {
  {
    ScopedEnv env("VGPU_BACKEND", "vulkan,metal");
    REQUIRE_VGPU_ERROR(invalid_argument, "unknown backend 'metal'", vgpu::RuntimeOptions::from_env());
    REQUIRE_VGPU_ERROR(invalid_argument, "VGPU_BACKEND", vgpu::Runtime{});
  }
  REQUIRE_VGPU_ERROR(invalid_argument, "backend", vgpu::parse_backend_kind("directx"));
  vgpu::Runtime rt(vgpu::RuntimeOptions{});
  REQUIRE_VGPU_ERROR(unavailable, "no device 'cpu:7'", rt.open("cpu:7"));
  REQUIRE_VGPU_ERROR(invalid_argument, "does not start with a backend name", rt.open("gpu:0"));
  REQUIRE_VGPU_ERROR(invalid_argument, "does not start with a backend name", rt.open(""));
  require_usable(rt.open("cpu:0"));
}

}  // namespace vgpu_test
